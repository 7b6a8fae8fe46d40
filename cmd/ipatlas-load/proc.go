package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ipatlas/ipatlas/internal/addrfile"
)

// proc is a server subprocess. Its output goes straight to a log file (not
// through this process, whose CPU the measurement shares); its addresses
// come in a file of their own (see waitAddrs).
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // of Wait, once done is closed
}

// startProc starts name with args; env nil means this process's environment.
func startProc(logPath string, env []string, name string, args ...string) (*proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own descriptor
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	p := &proc{cmd: cmd, log: logPath, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// waitAddrs waits for the process to write its listeners' addresses to
// addrFile (the --addr-file of ipatlas serve and of the reference server).
func (p *proc) waitAddrs(timeout time.Duration, addrFile string) (addrfile.Addrs, error) {
	deadline := time.Now().Add(timeout)
	for {
		a, err := addrfile.Read(addrFile)
		if err == nil {
			return a, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return addrfile.Addrs{}, err
		}
		select {
		case <-p.done:
			return addrfile.Addrs{}, fmt.Errorf("%s exited: %v (log: %s)", p.cmd.Path, p.err, p.log)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return addrfile.Addrs{}, fmt.Errorf("%s did not report its addresses within %v (log: %s)", p.cmd.Path, timeout, p.log)
		}
	}
}

// stop asks the process to shut down gracefully and waits for it.
func (p *proc) stop(timeout time.Duration) error {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		var ee *exec.ExitError
		if errors.As(p.err, &ee) {
			return fmt.Errorf("%s: %v (log: %s)", p.cmd.Path, p.err, p.log)
		}
		return p.err
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%s did not stop within %v; killed", p.cmd.Path, timeout)
	}
}

// waitHealthy polls url until it answers 200.
func waitHealthy(ctx context.Context, client *http.Client, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not healthy within %v (last: %v)", url, timeout, errOrStatus(err, resp))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func errOrStatus(err error, resp *http.Response) string {
	if err != nil {
		return err.Error()
	}
	return resp.Status
}

// runTool runs a short command and returns its stdout.
func runTool(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// processCPU is the user+system CPU time a process has used so far, read
// from /proc (Linux only: false elsewhere).
func processCPU(pid int) (time.Duration, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name (field 2) may hold spaces; fields after it are
	// counted from its closing parenthesis. utime and stime are fields 14
	// and 15, in clock ticks (USER_HZ, 100 on every Linux platform Go
	// supports).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// procMemory is a process's memory as Linux accounts it, in bytes: RSS,
// PSS (shared pages divided among the processes that map them, so the
// mmap'd data files count once across processes), and the anonymous part
// (heap, stacks: what the process itself allocated).
type procMemory struct {
	rss, pss, anon int64
}

// processMemory reads /proc/PID/smaps_rollup.
func processMemory(pid int) (procMemory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return procMemory{}, err
	}
	var m procMemory
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			m.rss = n << 10
		case "Pss:":
			m.pss = n << 10
		case "Anonymous:":
			m.anon = n << 10
		}
	}
	if m.rss == 0 {
		return m, errors.New("no Rss line in smaps_rollup")
	}
	return m, nil
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

// pssParts splits a process's PSS by what its pages hold: the program's
// own file (text and data), the MMDB files it maps, other files (shared
// libraries), and anonymous memory (Go heap, stacks, runtime); read from
// /proc/PID/smaps.
type pssParts struct {
	binary, mmdb, files, anon int64
}

func processPSSParts(pid int) (pssParts, error) {
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return pssParts{}, err
	}
	var p pssParts
	var cur *int64
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") || strings.Contains(f[0], "-") {
			// A mapping's header: address range, perms, offset, dev, inode, path.
			path := ""
			if len(f) >= 6 {
				path = f[5]
			}
			switch {
			case path == exe && exe != "":
				cur = &p.binary
			case strings.HasSuffix(path, ".mmdb"):
				cur = &p.mmdb
			case strings.HasPrefix(path, "/"):
				cur = &p.files
			default:
				cur = &p.anon
			}
			continue
		}
		if f[0] == "Pss:" && len(f) == 3 && cur != nil {
			if n, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				*cur += n << 10
			}
		}
	}
	return p, nil
}

func (p pssParts) String() string {
	return fmt.Sprintf("binary %s, MMDB files %s, other files %s, anonymous %s", mib(p.binary), mib(p.mmdb), mib(p.files), mib(p.anon))
}
