package testenv

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records Fatal/Skip instead of stopping.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(f string, a ...any) {
	r.fatal = fmt.Sprintf(f, a...)
	runtime.Goexit()
}
func (r *recorder) Skip(a ...any) {
	r.skip = fmt.Sprint(a...)
	runtime.Goexit()
}

func call(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); fn(r) }()
	<-done
	return r
}

func TestUnreachableServiceFailsInCIAndSkipsElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("AWS(t) skips every integration test in -short mode")
	}
	// Nothing listens on port 1 of the loopback address.
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	t.Setenv("CI", "true")
	r := call(t, func(tb testing.TB) { AWS(tb) })
	if r.fatal == "" || !strings.Contains(r.fatal, "AWS emulator") || !strings.Contains(r.fatal, "make up") {
		t.Fatalf("CI=true: want a failure naming the AWS emulator and `make up`, got fatal=%q skip=%q", r.fatal, r.skip)
	}
	t.Setenv("CI", "")
	r = call(t, func(tb testing.TB) { AWS(tb) })
	if r.skip == "" || r.fatal != "" {
		t.Fatalf("outside CI: want a skip, got fatal=%q skip=%q", r.fatal, r.skip)
	}

	t.Setenv("MILL_DATABASE_URL", "postgres://postgres@127.0.0.1:1/mill?sslmode=disable&connect_timeout=2")
	t.Setenv("CI", "true")
	r = call(t, func(tb testing.TB) { DatabaseURL(tb) })
	if !strings.Contains(r.fatal, "PostgreSQL") {
		t.Fatalf("CI=true: want a failure naming PostgreSQL, got fatal=%q skip=%q", r.fatal, r.skip)
	}
}

func TestRequireLoopback(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:4566", "http://localhost:4566", "http://[::1]:4566"} {
		r := call(t, func(tb testing.TB) { RequireLoopback(tb, "x", u) })
		if r.fatal != "" {
			t.Errorf("%s: unexpected failure %q", u, r.fatal)
		}
	}
	for _, u := range []string{"https://sqs.us-east-1.amazonaws.com", "http://10.0.0.1:4566"} {
		r := call(t, func(tb testing.TB) { RequireLoopback(tb, "x", u) })
		if !strings.Contains(r.fatal, "not a loopback") {
			t.Errorf("%s: want a loopback failure, got %q", u, r.fatal)
		}
	}
}

func TestWithSearchPath(t *testing.T) {
	got := WithSearchPath("postgres://u:p@127.0.0.1:5432/mill?sslmode=disable", "t_abc")
	if !strings.Contains(got, "search_path=t_abc") || !strings.Contains(got, "sslmode=disable") {
		t.Fatalf("got %q", got)
	}
}
