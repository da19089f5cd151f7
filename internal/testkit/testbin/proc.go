package testbin

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Spec says how to start a process.
type Spec struct {
	Path string   // the binary
	Args []string // its arguments
	// Env is the child's whole environment; nil gives it this process's.
	Env []string
	Dir string // working directory; empty: this process's
	// Stdout and Stderr, when set, receive a copy of the child's output
	// (e.g. a log file other code reads); the caller closes them after
	// the child exits.
	Stdout, Stderr io.Writer
	// Grace is how long Stop waits after SIGTERM before it kills the
	// child; zero means 20 s.
	Grace time.Duration
	// Setpgid starts the child in its own process group, which Stop and
	// Kill signal whole (a script and the processes it starts).
	Setpgid bool
}

// Proc is a started child process. Its output (stdout and stderr
// together, and each alone) is kept in memory while it runs; when the
// test ends it is stopped, and its output is logged if the test failed.
type Proc struct {
	Name string // the binary's base name, for messages
	Cmd  *exec.Cmd

	out, stdout, stderr Buffer
	grace               time.Duration
	group               bool
	done                chan struct{}
	err                 error
}

// Start runs s.Path with s.Args; the test fails if it cannot start.
func Start(t testing.TB, s Spec) *Proc {
	t.Helper()
	p := &Proc{Name: filepath.Base(s.Path), grace: s.Grace, group: s.Setpgid, done: make(chan struct{})}
	if p.grace == 0 {
		p.grace = 20 * time.Second
	}
	c := exec.Command(s.Path, s.Args...)
	c.Env, c.Dir = s.Env, s.Dir
	// The output is copied through pipes: once the child exits, stop
	// waiting for a grandchild that still holds them.
	c.WaitDelay = 10 * time.Second
	c.Stdout = tee(&p.out, &p.stdout, s.Stdout)
	c.Stderr = tee(&p.out, &p.stderr, s.Stderr)
	if s.Setpgid {
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	p.Cmd = c
	if err := c.Start(); err != nil {
		t.Fatalf("start %s: %v", p.Name, err)
	}
	go func() { p.err = c.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.Stop()
		if t.Failed() {
			t.Logf("%s output (its last %d lines, cut at 400 bytes):\n%s", p.Name, failureLines, CutLines(lastLines(p.Output(), failureLines), 400))
		}
	})
	return p
}

// Run runs s to its end, at most d (then the child is killed and the test
// fails), and returns the finished process: its output and ExitCode.
func Run(t testing.TB, d time.Duration, s Spec) *Proc {
	t.Helper()
	p := Start(t, s)
	_ = p.Wait(t, d)
	return p
}

func tee(ws ...io.Writer) io.Writer {
	var out []io.Writer
	for _, w := range ws {
		if w != nil {
			out = append(out, w)
		}
	}
	return io.MultiWriter(out...)
}

// Output is what the child wrote so far, stdout and stderr together.
func (p *Proc) Output() string { return p.out.String() }

// Stdout is what the child wrote to its standard output so far.
func (p *Proc) Stdout() string { return p.stdout.String() }

// Stderr is what the child wrote to its standard error so far.
func (p *Proc) Stderr() string { return p.stderr.String() }

// Lines are the complete lines of the output so far.
func (p *Proc) Lines() []string {
	s := p.Output()
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.Split(s[:i], "\n")
	}
	return nil
}

// WaitLine waits up to d for an output line holding substr and returns
// it; the test fails if the child exits or d passes first.
func (p *Proc) WaitLine(t testing.TB, d time.Duration, substr string) string {
	t.Helper()
	return p.WaitLineFunc(t, d, fmt.Sprintf("a line with %q", substr), func(l string) bool { return strings.Contains(l, substr) })
}

// WaitLineFunc waits up to d for an output line for which match holds.
func (p *Proc) WaitLineFunc(t testing.TB, d time.Duration, what string, match func(line string) bool) string {
	t.Helper()
	seen := 0
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		exited := p.Exited() // before reading: a line written before the exit is read
		lines := p.Lines()
		for ; seen < len(lines); seen++ {
			if match(lines[seen]) {
				return lines[seen]
			}
		}
		if exited {
			t.Fatalf("%s exited (%v) before writing %s", p.Name, p.err, what)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no %s within %v", p.Name, what, d)
		}
	}
}

// Done is closed when the child has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the child has exited.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Err is the child's exit error (nil for a zero exit); valid once Done.
func (p *Proc) Err() error {
	<-p.done
	return p.err
}

// ExitCode is the child's exit code once Done: -1 when a signal ended it.
func (p *Proc) ExitCode() int {
	<-p.done
	return p.Cmd.ProcessState.ExitCode()
}

// Wait waits up to d for the child to exit and returns its exit error; if
// it is still running then, it is killed and the test fails.
func (p *Proc) Wait(t testing.TB, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		p.Kill()
		t.Fatalf("%s did not exit within %v", p.Name, d)
		return nil
	}
}

// Signal sends sig to the child (its group with Setpgid); the test fails
// if it cannot be sent.
func (p *Proc) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.signal(sig); err != nil {
		t.Fatalf("signal %s %v: %v", p.Name, sig, err)
	}
}

func (p *Proc) signal(sig syscall.Signal) error {
	if p.group {
		return syscall.Kill(-p.Cmd.Process.Pid, sig)
	}
	return p.Cmd.Process.Signal(sig)
}

// Stop ends the child: SIGTERM, then a kill when it has not exited after
// the grace period (with Setpgid, the group, and at the end whatever is
// left of it). It returns the exit error; a stopped child's is
// usually non-nil (the signal), so callers check the output instead.
func (p *Proc) Stop() error {
	if !p.Exited() {
		_ = p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(p.grace):
			p.Kill()
		}
	}
	if p.group { // what the leader started and left behind
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
	}
	return p.Err()
}

// Kill kills the child at once (its group with Setpgid) and waits for it.
func (p *Proc) Kill() {
	if !p.Exited() {
		_ = p.signal(syscall.SIGKILL)
	}
	<-p.done
}

// Alive fails the test if the child has exited.
func (p *Proc) Alive(t testing.TB) {
	t.Helper()
	if p.Exited() {
		t.Fatalf("%s exited: %v", p.Name, p.Cmd.ProcessState)
	}
}

// Healthy fails the test unless the child runs and its /healthz at addr
// answers 200.
func (p *Proc) Healthy(t testing.TB, addr string) {
	t.Helper()
	p.Alive(t)
	if err := healthz(addr); err != nil {
		t.Fatalf("%s %v", p.Name, err)
	}
}

// WaitHealthy waits up to d for the child's /healthz at addr to answer
// 200; the test fails if the child exits or d passes first.
func (p *Proc) WaitHealthy(t testing.TB, d time.Duration, addr string) {
	t.Helper()
	var err error
	if !Poll(d, 100*time.Millisecond, func() bool { err = healthz(addr); return err == nil || p.Exited() }) || p.Exited() {
		if p.Exited() {
			t.Fatalf("%s exited (%v) before it was healthy", p.Name, p.err)
		}
		t.Fatalf("%s not healthy within %v: %v", p.Name, d, err)
	}
}

var healthClient = &http.Client{Timeout: 5 * time.Second}

func healthz(addr string) error {
	resp, err := healthClient.Get("http://" + addr + "/healthz")
	if err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthz: %s", resp.Status)
	}
	return nil
}

// PeakRSS returns the child's peak resident set (VmHWM) in bytes, or 0
// when /proc does not say.
func (p *Proc) PeakRSS() int64 { return p.Status("VmHWM") }

// Status returns a memory field of the child's /proc status (VmHWM, VmRSS,
// RssAnon, RssFile...) in bytes, or 0 when /proc does not say.
func (p *Proc) Status(field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// failureLines is how much of a child's output a failed test logs.
const failureLines = 300

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	s = strings.TrimRight(s, "\n")
	for i, k := len(s)-1, 0; i >= 0; i-- {
		if s[i] == '\n' {
			if k++; k == n {
				return s[i+1:]
			}
		}
	}
	return s
}

// CutLines cuts every line of s at n bytes (a test log stays readable
// when a child logs a whole hostile message).
func CutLines(s string, n int) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if len(l) > n {
			l = l[:n] + "…"
		}
		b.WriteString(l + "\n")
	}
	return b.String()
}
