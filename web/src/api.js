// JSON calls of the portal and the console: same-origin cookies, the
// session's CSRF token on every change, a deadline on every call, and
// failures as Failure with the API's code (pages translate by code).
import { Failure, fetchJSON } from './net.js';

export const API_TIMEOUT_MS = 15000;

let csrf = '';

// setCSRF keeps the session's token, given by sign-in and session reads.
export function setCSRF(token) {
  csrf = token || '';
}

// call sends method to url with body (JSON) and returns the parsed answer
// of a 2xx, or throws a Failure. A 204 answers null.
export async function call(method, url, body, headers) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json', ...(headers || {}) } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (method !== 'GET' && method !== 'HEAD' && csrf) init.headers['X-CSRF-Token'] = csrf;
  let status;
  let data;
  try {
    [status, data] = await fetchJSON(url, init, API_TIMEOUT_MS);
  } catch (err) {
    // 204 has no body, which fetchJSON refuses as not JSON.
    if (err instanceof Failure && err.status === 204) return null;
    throw err;
  }
  if (status >= 200 && status < 300) return data;
  throw new Failure((data && data.error) || `HTTP ${status}`, (data && data.code) || '', status, data);
}

export const get = (url) => call('GET', url);
export const post = (url, body) => call('POST', url, body === undefined ? {} : body);
export const patch = (url, body) => call('PATCH', url, body);
export const del = (url) => call('DELETE', url);
