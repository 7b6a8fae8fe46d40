//go:build linux

// Package deploy tests the container recipe: the repository's
// Containerfile, built with buildah from the static binary, run, serving
// and answering.
package deploy

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ipatlas/ipatlas"
	"github.com/ipatlas/ipatlas/client"
	"github.com/ipatlas/ipatlas/internal/addrfile"
	"github.com/ipatlas/ipatlas/internal/geo/geotest"
	"github.com/ipatlas/ipatlas/internal/postgres/pgtest"
	"github.com/ipatlas/ipatlas/internal/rdns/rdnstest"
)

// imageUser is the Containerfile's USER.
const imageUser = 65532

// buildah runs buildah on the test's own storage, so that nothing is left
// in the machine's and no other user of buildah is disturbed.
type buildah struct {
	t          *testing.T
	root, run  string
	ctx        context.Context
	containers []string
}

func (b *buildah) cmd(args ...string) *exec.Cmd {
	return exec.CommandContext(b.ctx, "buildah", append([]string{"--root", b.root, "--runroot", b.run, "--storage-driver", "vfs"}, args...)...)
}

// do runs a buildah command to its end and returns its standard output.
func (b *buildah) do(args ...string) string {
	b.t.Helper()
	var out, errOut bytes.Buffer
	c := b.cmd(args...)
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		b.t.Fatalf("buildah %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// TestContainerImage builds the image as docs/container.md says (the
// static binary with CGO_ENABLED=0, then the Containerfile), checks what
// the recipe promises (static, no shell needed, a non-root user, /data a
// volume the user can write, the health check) and runs the image's
// binary with buildah's chroot isolation: it serves a fixture dataset,
// answers a metered query with a host name from a local DNS server, and
// its health check passes; on PostgreSQL too when the test server is
// configured, found by a host name.
func TestContainerImage(t *testing.T) {
	if _, err := exec.LookPath("buildah"); err != nil {
		t.Skip("buildah is not installed: this test builds and runs the container image (apt-get install buildah; .ci/run installs it)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: the fixture data dir is given to the image's user (uid 65532), and buildah's chroot isolation runs as root (.ci/run runs as root)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	if dl, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), dl.Add(-30*time.Second))
	}
	defer cancel()
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}

	// The binary, exactly as the recipe builds it.
	buildCtx := t.TempDir()
	bin := filepath.Join(buildCtx, "ipatlas")
	start := time.Now()
	gb := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/ipatlas")
	gb.Dir, gb.Env = repo, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := gb.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	t.Logf("CGO_ENABLED=0 go build -trimpath: %.1fs", time.Since(start).Seconds())
	checkStatic(t, bin)
	// The repository's ignore file, which must let the binary through.
	ignore, err := os.ReadFile(filepath.Join(repo, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(buildCtx, ".dockerignore"), ignore, 0o644); err != nil {
		t.Fatal(err)
	}

	store := t.TempDir()
	b := &buildah{t: t, root: filepath.Join(store, "root"), run: filepath.Join(store, "run"), ctx: ctx}
	t.Cleanup(func() {
		for _, c := range b.containers {
			b.cmd("rm", c).Run()
		}
		b.cmd("rmi", "--all", "--force").Run()
	})
	start = time.Now()
	b.do("bud", "--format", "docker", "--isolation", "chroot", "-f", filepath.Join(repo, "Containerfile"), "-t", "localhost/ipatlas-test", buildCtx)
	t.Logf("buildah bud: %.1fs", time.Since(start).Seconds())
	checkImageConfig(t, b.do("inspect", "--type", "image", "localhost/ipatlas-test"))

	c := strings.TrimSpace(b.do("from", "--name", "ipatlas-test", "localhost/ipatlas-test"))
	b.containers = append(b.containers, c)

	// The image's own /data, with no volume given: the image's user
	// creates the store there.
	out := b.do("run", "--isolation", "chroot", c, "--", "/usr/local/bin/ipatlas", "db", "migrate")
	if !strings.HasPrefix(out, "Migrated the sqlite store from schema version 0 to ") {
		t.Fatalf("db migrate in the image's /data: %q", out)
	}

	t.Run("sqlite", func(t *testing.T) {
		serveInContainer(t, b, c, "")
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.WithSearchPath(t, pgtest.DSN(t), pgtest.NewSchema(t))
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" {
			t.Skipf("%s names %s; this test reaches a server on this machine's loopback by the name localhost", pgtest.EnvDSN, u.Hostname())
		}
		// By name: the static binary's resolver reads the container's
		// /etc/hosts.
		u.Host = "localhost:" + u.Port()
		serveInContainer(t, b, c, u.String())
	})
}

// checkStatic fails unless bin is a statically linked executable built
// with CGO_ENABLED=0 that carries the fallback CA roots (the image has no
// CA bundle).
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (program header %v): the image has no libc", p.Type)
		}
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "CGO_ENABLED" && s.Value == "0" }) {
		t.Errorf("build settings %v lack CGO_ENABLED=0", bi.Settings)
	}
	if !slices.ContainsFunc(bi.Deps, func(m *debug.Module) bool { return m.Path == "golang.org/x/crypto/x509roots/fallback" }) {
		t.Error("the binary lacks golang.org/x/crypto/x509roots/fallback: in an image without CA certificates it could not fetch over HTTPS")
	}
}

// checkImageConfig checks what the Containerfile promises, from buildah
// inspect's output.
func checkImageConfig(t *testing.T, inspect string) {
	t.Helper()
	var img struct {
		Docker struct {
			Config struct {
				User        string
				Env         []string
				Entrypoint  []string
				Cmd         []string
				Volumes     map[string]struct{}
				Healthcheck struct {
					Test        []string
					StartPeriod time.Duration
				}
				ExposedPorts map[string]struct{}
			} `json:"config"`
		}
	}
	if err := json.Unmarshal([]byte(inspect), &img); err != nil {
		t.Fatalf("buildah inspect: %v", err)
	}
	cfg := img.Docker.Config
	if cfg.User != fmt.Sprintf("%d:%d", imageUser, imageUser) {
		t.Errorf("USER %q, want %d:%d", cfg.User, imageUser, imageUser)
	}
	if _, ok := cfg.Volumes["/data"]; !ok {
		t.Errorf("volumes %v lack /data", cfg.Volumes)
	}
	if !slices.Contains(cfg.Env, "IPATLAS_DATA_DIR=/data") {
		t.Errorf("env %v lacks IPATLAS_DATA_DIR=/data", cfg.Env)
	}
	if want := []string{"CMD", "/usr/local/bin/ipatlas", "healthcheck"}; !slices.Equal(cfg.Healthcheck.Test, want) {
		t.Errorf("health check %q, want %q", cfg.Healthcheck.Test, want)
	}
	if got := append(slices.Clone(cfg.Entrypoint), cfg.Cmd...); !slices.Equal(got, []string{"/usr/local/bin/ipatlas", "serve"}) {
		t.Errorf("entrypoint and command %q, want ipatlas serve", got)
	}
	for _, p := range []string{"8080/tcp", "8081/tcp"} {
		if _, ok := cfg.ExposedPorts[p]; !ok {
			t.Errorf("exposed ports %v lack %s", cfg.ExposedPorts, p)
		}
	}
}

var keyRe = regexp.MustCompile(`ipa_[0-9A-Za-z]{12}_[0-9A-Za-z]{43}`)

// lockedBuffer is a bytes.Buffer written by a child while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveInContainer runs `ipatlas serve` in container c on a fixture data
// dir (bind-mounted: buildah run keeps the image's /data volume for
// itself), with the account store storeDSN ("" for SQLite in the data
// dir), and queries it.
func serveInContainer(t *testing.T, b *buildah, c, storeDSN string) {
	data := t.TempDir()
	geotest.WriteFixture(t, data)
	if err := filepath.WalkDir(data, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, imageUser, imageUser)
	}); err != nil {
		t.Fatal(err)
	}
	place := geotest.MountainView
	zone := rdnstest.New(t,
		"8.8.8.8.in-addr.arpa. 300 IN PTR dns.google.",
		"dns.google. 300 IN A 8.8.8.8")

	args := []string{"run", "--isolation", "chroot", "--network", "host",
		"-v", data + ":/srv/data", "-e", "IPATLAS_DATA_DIR=/srv/data"}
	if storeDSN != "" {
		args = append(args, "-e", "IPATLAS_STORE="+storeDSN)
	}
	args = append(args, c, "--", "/usr/local/bin/ipatlas", "serve",
		"--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--addr-file", "/srv/data/addrs.json",
		"--no-fetch", "--update-interval", "0", "--tor-interval", "0", "--privacy-interval", "0", "--geofeed", "none",
		"--resolver", zone.Addr)
	serve := b.cmd(args...)
	stdout, stderr := &lockedBuffer{}, &lockedBuffer{}
	serve.Stdout, serve.Stderr = stdout, stderr
	serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	start := time.Now()
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			syscall.Kill(-serve.Process.Pid, syscall.SIGKILL)
			<-exited
			t.Error("the container did not stop within 30 s of SIGTERM")
		}
	}
	t.Cleanup(stop)

	var addrs addrfile.Addrs
	for deadline := time.Now().Add(60 * time.Second); ; {
		var err error
		if addrs, err = addrfile.Read(filepath.Join(data, "addrs.json")); err == nil {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited before listening: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not listen within 60 s\nstderr:\n%s", stderr)
		}
	}
	t.Logf("buildah run ... ipatlas serve: listening after %.1fs", time.Since(start).Seconds())

	// The image's health check, run in the container as the runtime would.
	hc := b.do("run", "--isolation", "chroot", "--network", "host", "-e", "IPATLAS_ADMIN_LISTEN="+addrs.Admin, c, "--", "/usr/local/bin/ipatlas", "healthcheck")
	if hc != "ready (http://"+addrs.Admin+"/readyz)\n" {
		t.Errorf("healthcheck: %q", hc)
	}

	key := keyRe.FindString(stdout.String())
	if key == "" {
		t.Fatalf("no first-run key on serve's stdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	cl, err := client.New(client.Config{URL: "http://" + addrs.Public, APIKey: key, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cl.LookupFields(b.ctx, place.IP, ipatlas.English, "country_code", "city", "asn", "hostname")
	if err != nil {
		t.Fatalf("query %s: %v\nstderr:\n%s", place.IP, err, stderr)
	}
	if r.Record.CountryCode != place.CountryCode || r.Record.City != place.City || r.Record.ASN != place.ASN {
		t.Errorf("query %s: %+v, want %s %s %s", place.IP, r.Record, place.CountryCode, place.City, place.ASN)
	}
	if r.Record.Hostname != "dns.google" {
		t.Errorf("query %s: hostname %q, want dns.google from the local DNS server", place.IP, r.Record.Hostname)
	}
	if r.Meta.CurrentCredits != 999 {
		t.Errorf("query %s: meta %+v, want 999 credits left of the first account's 1000", place.IP, r.Meta)
	}

	stop()
	// What the server wrote into the data dir is the image user's: the
	// process did not run as root.
	var written []string
	filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Stat(p, &st); err == nil {
			if st.Uid != imageUser {
				t.Errorf("%s is owned by uid %d, want %d", p, st.Uid, imageUser)
			}
			written = append(written, filepath.Base(p))
		}
		return nil
	})
	if !slices.Contains(written, "admin-token") {
		t.Errorf("serve wrote no admin token into the data dir (files: %v)", written)
	}
}
