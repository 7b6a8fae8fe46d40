// Network helpers: every request of the page has a deadline, enforced with
// an AbortController so that a family without connectivity (whose
// connection attempt may hang rather than fail) ends as "unavailable".

// The spec's client timeout for the Get-my-IP endpoints, and the sample
// clients' timeout for location queries.
export const MY_IP_TIMEOUT_MS = 5000;
export const QUERY_TIMEOUT_MS = 10000;

// withDeadline runs work(signal) and aborts it after ms milliseconds. The
// deadline covers the body as well as the headers: work reads the body
// before it returns.
export async function withDeadline(ms, work) {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), ms);
  try {
    return await work(ctl.signal);
  } finally {
    clearTimeout(timer);
  }
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const IPV6 = /^[0-9a-fA-F:.]+$/;

// looksLike reports whether text is an address of family ("IPv4" or
// "IPv6"). It guards against a captive portal or an error page answering
// in place of the service, not against a malicious server.
export function looksLike(family, text) {
  if (family === 'IPv4') {
    const m = IPV4.exec(text);
    return m !== null && m.slice(1).every((o) => Number(o) <= 255);
  }
  return text.includes(':') && IPV6.test(text) && text.length <= 45;
}

// fetchAddress asks a family-only endpoint for the caller's address. It
// answers null when the family is unavailable: no route, a refused or
// hung connection, a non-2xx answer, or a body that is not an address.
export async function fetchAddress(url, family) {
  try {
    return await withDeadline(MY_IP_TIMEOUT_MS, async (signal) => {
      const res = await fetch(url, {
        signal,
        cache: 'no-store',
        credentials: 'omit',
        referrerPolicy: 'no-referrer',
      });
      if (!res.ok) return null;
      const text = (await res.text()).trim();
      return looksLike(family, text) ? text : null;
    });
  } catch {
    return null;
  }
}

// Failure is what the page shows when a JSON call fails: the envelope's
// error text and code when the server sent one, else a description of the
// HTTP or network failure.
export class Failure extends Error {
  constructor(message, code, status, body) {
    super(message);
    this.code = code || '';
    this.status = status || 0;
    this.body = body || null;
  }
}

// fetchJSON calls a JSON endpoint and returns [status, body]. A network
// failure, a timeout or a body that is not JSON throws a Failure.
export async function fetchJSON(url, init, ms) {
  try {
    return await withDeadline(ms, async (signal) => {
      const res = await fetch(url, { ...init, signal, cache: 'no-store', referrerPolicy: 'no-referrer' });
      const text = await res.text();
      let body;
      try {
        body = JSON.parse(text);
      } catch {
        throw new Failure(`The server answered HTTP ${res.status} without a JSON body.`, '', res.status);
      }
      return [res.status, body];
    });
  } catch (err) {
    if (err instanceof Failure) throw err;
    if (err && err.name === 'AbortError') {
      throw new Failure(`No answer within ${ms / 1000} seconds.`, 'Timeout');
    }
    throw new Failure('The service could not be reached.', 'NetworkError');
  }
}

// envelopeFailure turns a failed envelope into a Failure.
export function envelopeFailure(status, env) {
  const text = (env && typeof env.error === 'string' && env.error) || `HTTP ${status}`;
  return new Failure(text, env && env.code, status, env);
}
