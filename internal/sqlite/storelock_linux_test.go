package sqlite

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

const (
	bindSrcEnv = "IPATLAS_SQLITE_TEST_BIND_SRC"
	bindDstEnv = "IPATLAS_SQLITE_TEST_BIND_DST"
)

// A bind mount of the database file is one more name for it: a second
// serve that sees the file at another path through a bind mount, in a
// mount namespace of its own, is refused. The namespace belongs to a
// user namespace, which needs no privilege where the kernel allows them
// (Linux's default); TestJournalOneWriterByEveryName's hard link in
// another directory is the same case without one.
func TestJournalOneWriterThroughABindMount(t *testing.T) {
	path, _, _ := journalFixture(t, Options{})
	srv, err := Open(t.Context(), path, Options{Journal: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "bound.db")
	if err := os.WriteFile(dst, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBindMountChild$", "-test.v")
	cmd.Env = append(os.Environ(), bindSrcEnv+"="+path, bindDstEnv+"="+dst)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skipf("this kernel gives no user namespace to mount in (%v); the hard link of TestJournalOneWriterByEveryName stands for the bind mount", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestBindMountChild") {
		t.Fatalf("the serve behind a bind mount: %v\n%s", err, out)
	}
}

// TestBindMountChild is the process TestJournalOneWriterThroughABindMount
// starts in its own namespaces; on its own it does nothing.
func TestBindMountChild(t *testing.T) {
	src, dst := os.Getenv(bindSrcEnv), os.Getenv(bindDstEnv)
	if src == "" {
		t.Skip("helper process of TestJournalOneWriterThroughABindMount, which starts it")
	}
	// Private first, so that the bind mount stays in this namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	a, errA := os.Stat(src)
	b, errB := os.Stat(dst)
	if errA != nil || errB != nil || !os.SameFile(a, b) {
		t.Fatalf("the bind mount is not the same file: %v %v", errA, errB)
	}
	st, err := Open(context.Background(), dst, Options{Journal: true})
	if !errors.Is(err, ErrStoreLocked) {
		if st != nil {
			st.Close()
		}
		t.Fatalf("a second serve through the bind mount %s: %v, want ErrStoreLocked", dst, err)
	}
	t.Logf("refused: %v", err)
}
