package main

import (
	"strings"
	"testing"
)

// Every URL that ipatlas fetches from refuses user info, with an error
// that names the setting and not the password, in serve's settings and
// db fetch's flags alike; nothing is fetched.
func TestURLSettingsRefuseCredentials(t *testing.T) {
	const secret = "Secret-7f3a"
	for _, name := range []string{"registry", "dbip-url", "maxmind-url", "postal-url", "x4bnet-url", "ipranges-url", "tor-exit-url"} {
		u := "http://user:" + secret + "@127.0.0.1:9/list"
		t.Run(name, func(t *testing.T) {
			_, err := parseServeConfig([]string{"--" + name, u}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": t.TempDir()})))
			if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--"+name) || !strings.Contains(err.Error(), "user:password@") {
				t.Errorf("serve: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("serve's error holds the password: %v", err)
			}
			env := envName(name)
			_, err = parseServeConfig(nil, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": t.TempDir(), env: u})))
			if err == nil || !strings.Contains(err.Error(), env) || strings.Contains(err.Error(), secret) {
				t.Errorf("serve, %s: %v", env, err)
			}

			out, errOut, err := runDBTest(t, nil, "db", "fetch", "--data-dir", t.TempDir(), "--geofeed", "none", "--"+name, u)
			if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--"+name) {
				t.Errorf("db fetch: %v", err)
			}
			if all := out + errOut + errString(err); strings.Contains(all, secret) {
				t.Errorf("db fetch shows the password:\n%s", all)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
