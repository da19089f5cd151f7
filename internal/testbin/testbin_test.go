package testbin

import (
	"os/exec"
	"strings"
	"sync"
	"testing"
)

func TestBuildRunsTheBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a binary")
	}
	bins := Build(t, "millctl")
	out, err := exec.Command(bins["millctl"], "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "millctl ") {
		t.Fatalf("millctl version: %v: %q", err, out)
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
