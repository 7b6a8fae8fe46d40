package main

import (
	"strings"
	"testing"
	"time"
)

func TestTLSSettingsGoTogether(t *testing.T) {
	for _, args := range [][]string{{"--tls-cert", "c.pem"}, {"--tls-key", "k.pem"}} {
		_, err := parseServeConfig(args, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
		if err == nil || !strings.Contains(err.Error(), "--tls-cert and --tls-key go together") {
			t.Errorf("%v: %v", args, err)
		}
	}
	c, err := parseServeConfig([]string{"--tls-cert", "c.pem", "--tls-key", "k.pem"}, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"})))
	if err != nil || c.TLSCert != "c.pem" || c.TLSKey != "k.pem" {
		t.Errorf("both: %+v, %v", c, err)
	}
}

// --hsts-max-age is a year by default; 0 turns the header off, from any
// source; a negative one is a usage error.
func TestHSTSSetting(t *testing.T) {
	e := testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d"}))
	if c, err := parseServeConfig(nil, e); err != nil || c.HSTSMaxAge != 365*24*time.Hour {
		t.Errorf("default: %v, %v", c.HSTSMaxAge, err)
	}
	if c, err := parseServeConfig(nil, testEnv(mapEnv(map[string]string{"IPATLAS_DATA_DIR": "/d", "IPATLAS_HSTS_MAX_AGE": "0"}))); err != nil || c.HSTSMaxAge != 0 {
		t.Errorf("IPATLAS_HSTS_MAX_AGE=0: %v, %v", c.HSTSMaxAge, err)
	}
	if c, err := parseServeConfig([]string{"--hsts-max-age", "24h"}, e); err != nil || c.HSTSMaxAge != 24*time.Hour {
		t.Errorf("--hsts-max-age 24h: %v, %v", c.HSTSMaxAge, err)
	}
	if _, err := parseServeConfig([]string{"--hsts-max-age", "-1s"}, e); err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "--hsts-max-age") {
		t.Errorf("--hsts-max-age -1s: %v", err)
	}
}
