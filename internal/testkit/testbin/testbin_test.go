package testbin

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if os.Getenv("TESTBIN_CHILD") != "" {
		child()
		os.Exit(0)
	}
	Main(m)
}

// child is the process the Proc tests start: this test binary, asked by
// TESTBIN_CHILD to act like a Mill binary (serve /healthz, log, stop on
// SIGTERM).
func child() {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	switch os.Getenv("TESTBIN_CHILD") {
	case "serve":
		http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {})
		go func() { _ = http.ListenAndServe(os.Getenv("TESTBIN_ADDR"), nil) }()
		fmt.Fprintln(os.Stderr, "level=INFO msg=starting")
		fmt.Println("ready")
		<-term
		fmt.Fprintln(os.Stderr, "level=INFO msg=stopped")
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		select {}
	case "exit":
		fmt.Println("bye")
		os.Exit(3)
	}
}

func startChild(t *testing.T, mode string, grace time.Duration, extra ...string) *Proc {
	return Start(t, Spec{Path: os.Args[0], Args: []string{"-test.run=^$"}, Env: Env(append([]string{"TESTBIN_CHILD=" + mode}, extra...)...), Grace: grace})
}

func TestProcLinesHealthAndStop(t *testing.T) {
	addr := FreeAddr(t)
	p := startChild(t, "serve", 10*time.Second, "TESTBIN_ADDR="+addr)
	if l := p.WaitLine(t, 10*time.Second, "ready"); l != "ready" {
		t.Fatalf("WaitLine = %q", l)
	}
	WaitFor(t, 10*time.Second, "healthz", func() bool {
		r, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			r.Body.Close()
		}
		return err == nil
	})
	p.Healthy(t, addr)
	if err := p.Stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, p.Output())
	}
	if !strings.Contains(p.Stderr(), "msg=stopped") || strings.Contains(p.Stdout(), "msg=") {
		t.Fatalf("stdout %q, stderr %q", p.Stdout(), p.Stderr())
	}
	if got := p.Lines(); len(got) != 3 {
		t.Fatalf("lines %q, want 3", got)
	}
}

func TestProcStopKillsAfterGrace(t *testing.T) {
	p := startChild(t, "ignore-term", 500*time.Millisecond)
	p.WaitLine(t, 10*time.Second, "ready")
	start := time.Now()
	err := p.Stop()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("stop: %v, want killed", err)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("killed after %v, before the grace period", d)
	}
}

func TestProcWaitExit(t *testing.T) {
	p := startChild(t, "exit", 0)
	err := p.Wait(t, 10*time.Second)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("wait: %v, want exit status 3", err)
	}
	if !p.Exited() || p.Lines()[0] != "bye" {
		t.Fatalf("exited %v, lines %q", p.Exited(), p.Lines())
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Second, time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Fatalf("Poll: n = %d", n)
	}
	if Poll(20*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Fatal("Poll held a false condition")
	}
}

func TestBuildRunsTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a binary")
	}
	bins := Build(t, "millctl")
	out, err := exec.Command(bins["millctl"], "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "millctl ") {
		t.Fatalf("millctl version: %v: %q", err, out)
	}
	if again := Build(t, "millctl"); again["millctl"] != bins["millctl"] {
		t.Fatalf("second Build gave %q, want the first's %q", again["millctl"], bins["millctl"])
	}
}

func TestBufferConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		}()
	}
	wg.Wait()
	if n := len(b.String()); n != 800 {
		t.Fatalf("buffer holds %d bytes, want 800", n)
	}
}

func TestLastLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"a\nb\nc\n", 2, "b\nc"}, {"a\nb\nc", 5, "a\nb\nc"}, {"", 3, ""}, {"a\nb\n", 1, "b"}} {
		if got := lastLines(c.in, c.n); got != c.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
