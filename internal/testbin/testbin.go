// Package testbin is the support for tests that run Mill's real binaries:
// Build compiles commands of ./cmd into a test's temporary directory (one
// go build, so shared packages compile once), and Buffer collects a running
// child's output safely while the test reads it.
package testbin

import (
	"bytes"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Build compiles ./cmd/<name> for every name into one temporary directory
// and returns each binary's path by name.
func Build(t testing.TB, names ...string) map[string]string {
	t.Helper()
	root := ModuleRoot(t)
	dir := t.TempDir()
	args := []string{"build", "-o", dir + string(filepath.Separator)}
	for _, n := range names {
		args = append(args, "./cmd/"+n)
	}
	c := exec.Command("go", args...)
	c.Dir = root
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", strings.Join(names, " "), err, out)
	}
	bins := make(map[string]string, len(names))
	for _, n := range names {
		bins[n] = filepath.Join(dir, n)
	}
	return bins
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
