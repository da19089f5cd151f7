package testenv

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/awsconfig"
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
	withoutRealAWS(t)
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

// withoutRealAWS unsets MILL_TEST_REAL_AWS until the test ends.
func withoutRealAWS(t *testing.T) {
	t.Setenv(RealAWSVar, "") // restored when the test ends
	os.Unsetenv(RealAWSVar)
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

// TestRealAWSNeedsAnExplicitConsistentOptIn: the real-AWS switch refuses to
// hand out configuration unless it names an account, the credentials belong
// to it, nothing points the SDK at an emulator, and the region is us-east-1.
func TestRealAWSNeedsAnExplicitConsistentOptIn(t *testing.T) {
	if testing.Short() {
		t.Skip("AWS(t) skips every integration test in -short mode")
	}
	var asked int
	orig := callerAccount
	callerAccount = func(context.Context, *awsconfig.Config) (string, error) {
		asked++
		return "123456789012", nil
	}
	t.Cleanup(func() {
		callerAccount = orig
		identityMu.Lock()
		clear(identities)
		identityMu.Unlock()
	})
	for _, v := range endpointVars {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_REGION", "us-east-1")

	for _, tc := range []struct {
		name, account, endpoint, region, want string
	}{
		{"not an account ID", "1", "", "us-east-1", "12-digit ID"},
		{"empty", "", "", "us-east-1", "12-digit ID"},
		{"an emulator endpoint too", "123456789012", "http://127.0.0.1:4566", "us-east-1", "AWS_ENDPOINT_URL"},
		{"another region", "123456789012", "", "eu-west-1", "us-east-1 only"},
		{"credentials of another account", "210987654321", "", "us-east-1", "belong to account 123456789012, not 210987654321"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(RealAWSVar, tc.account)
			t.Setenv("AWS_ENDPOINT_URL", tc.endpoint)
			t.Setenv("AWS_REGION", tc.region)
			r := call(t, func(tb testing.TB) { AWS(tb) })
			if !strings.Contains(r.fatal, tc.want) {
				t.Fatalf("want a failure saying %q, got fatal=%q skip=%q", tc.want, r.fatal, r.skip)
			}
		})
	}

	t.Setenv(RealAWSVar, "123456789012")
	var cfg *awsconfig.Config
	r := call(t, func(tb testing.TB) { cfg = AWS(tb) })
	if r.fatal != "" || r.skip != "" || cfg == nil || cfg.EndpointOverride || cfg.AWS.Region != "us-east-1" {
		t.Fatalf("consistent opt-in: fatal=%q skip=%q cfg=%+v", r.fatal, r.skip, cfg)
	}
	_ = call(t, func(tb testing.TB) { AWS(tb) })
	if asked != 2 { // 210987654321 once, 123456789012 once: each account is checked once
		t.Errorf("GetCallerIdentity asked %d times, want 2", asked)
	}
	if p := Prefix(t); !strings.HasPrefix(p, RealAWSPrefix) {
		t.Errorf("Prefix on real AWS = %q, want it to start with %q", p, RealAWSPrefix)
	}
}

// TestNoRealAWSWithoutTheSwitch: without MILL_TEST_REAL_AWS, an endpoint
// that is not loopback fails the test, and no endpoint at all is an
// unreachable emulator — never a call to AWS.
func TestNoRealAWSWithoutTheSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("AWS(t) skips every integration test in -short mode")
	}
	orig := callerAccount
	callerAccount = func(context.Context, *awsconfig.Config) (string, error) {
		t.Error("asked AWS who the credentials belong to without the switch")
		return "", nil
	}
	t.Cleanup(func() { callerAccount = orig })
	withoutRealAWS(t)
	t.Setenv("CI", "true")
	t.Setenv("AWS_ENDPOINT_URL", "")
	r := call(t, func(tb testing.TB) { AWS(tb) })
	if !strings.Contains(r.fatal, "AWS_ENDPOINT_URL is not set") {
		t.Errorf("no endpoint: fatal=%q skip=%q", r.fatal, r.skip)
	}
	t.Setenv("AWS_ENDPOINT_URL", "https://sqs.us-east-1.amazonaws.com")
	r = call(t, func(tb testing.TB) { AWS(tb) })
	if !strings.Contains(r.fatal, "not a loopback") {
		t.Errorf("AWS endpoint: fatal=%q skip=%q", r.fatal, r.skip)
	}
	if p := Prefix(t); strings.HasPrefix(p, RealAWSPrefix) {
		t.Errorf("Prefix = %q", p)
	}
}

// The run's tag (make test's leftovers check) is in every prefix and schema
// name; a malformed one fails the test.
func TestRunTag(t *testing.T) {
	t.Setenv(RunVar, "")
	if p := Prefix(t); len(p) != 12 {
		t.Errorf("untagged Prefix = %q", p)
	}
	t.Setenv(RunVar, "beef")
	if p := Prefix(t); !strings.HasPrefix(p, "tbeef") || len(p) != 16 {
		t.Errorf("tagged Prefix = %q", p)
	}
	t.Setenv(RunVar, "BEEF")
	if r := call(t, func(tb testing.TB) { Prefix(tb) }); !strings.Contains(r.fatal, RunVar) {
		t.Errorf("malformed tag: fatal=%q", r.fatal)
	}
}
