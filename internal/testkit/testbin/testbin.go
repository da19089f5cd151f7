// Package testbin is the one harness for tests that run Mill's real
// binaries. Build compiles commands of ./cmd once per test binary (one go
// build, so shared packages compile once; Main removes them at the end);
// Start runs one as a child process whose output the test reads line by
// line while it runs (WaitLine), checks (Alive, Healthy) and stops (Stop:
// SIGTERM, then a kill after a grace period); the output is logged when
// the test fails. WaitFor and Poll wait for a condition with a deadline,
// polling at a short interval: these tests watch other processes, so
// there is no clock to fake.
package testbin

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	buildMu  sync.Mutex
	buildDir string
	built    = map[string]string{}
)

// Build compiles ./cmd/<name> for every name not built yet by this test
// binary (in one go build) and returns each binary's path by name. The
// binaries live until Main removes them.
func Build(t testing.TB, names ...string) map[string]string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	var missing []string
	for _, n := range names {
		if _, ok := built[n]; !ok && !contains(missing, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		if buildDir == "" {
			// A test's TempDir goes with the test: build into one that
			// outlives it.
			dir, err := os.MkdirTemp("", "mill-testbin-")
			if err != nil {
				t.Fatal(err)
			}
			buildDir = dir
		}
		args := []string{"build", "-o", buildDir + string(filepath.Separator)}
		for _, n := range missing {
			args = append(args, "./cmd/"+n)
		}
		c := exec.Command("go", args...)
		c.Dir = ModuleRoot(t)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", strings.Join(missing, " "), err, out)
		}
		for _, n := range missing {
			built[n] = filepath.Join(buildDir, n)
		}
	}
	bins := make(map[string]string, len(names))
	for _, n := range names {
		bins[n] = built[n]
	}
	return bins
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Main runs the tests and removes what Build compiled; a package whose
// tests call Build calls it from TestMain.
func Main(m *testing.M) {
	code := m.Run()
	buildMu.Lock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	buildMu.Unlock()
	os.Exit(code)
}

// ModuleRoot returns the directory holding the module's go.mod.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == "/dev/null" {
		t.Fatalf("go env GOMOD: %q, %v: not inside the module", gomod, err)
	}
	return filepath.Dir(gomod)
}

// Buffer collects a running child's output; it is safe to read while the
// child writes.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// FreeAddr returns a loopback address nothing listened on a moment ago: a
// port for a child process to serve on, or, left alone, one that refuses
// connections (a stopped service).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Env is this process's environment without its MILL_* variables (so a
// developer's settings do not leak into a child), plus extra ("K=V").
func Env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "MILL_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}
