package firstsession

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

// TestDaemonsEmulatorStopped: with the AWS emulator and PostgreSQL stopped,
// Workman and the three producers exit 1 within 5 s with one line naming the
// endpoint and what to do (millctl's commands: cmd/millctl's
// TestEmulatorStopped).
func TestDaemonsEmulatorStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	awsEndpoint := "http://" + testbin.FreeAddr(t)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"AWS_ENDPOINT_URL=" + awsEndpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"MILL_DATABASE_URL=postgres://postgres:mill@" + testbin.FreeAddr(t) + "/mill?sslmode=disable", "MILL_HTTP_ADDR=127.0.0.1:0",
	}
	bins := testbin.Build(t, "workman", "dupproducer", "bitproducer", "statsproducer")
	for name, bin := range bins {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			cmd := testbin.Run(t, 30*time.Second, testbin.Spec{Path: bin, Env: env})
			err, stderr := cmd.Err(), cmd.Stderr()
			took := time.Since(start)
			t.Logf("%s → %v in %v\n%s", name, err, took.Round(time.Millisecond), stderr)
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
				t.Errorf("%v, want exit status 1", err)
			}
			if took > 5*time.Second {
				t.Errorf("took %v, want at most 5 s", took)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], name+": cannot reach "+awsEndpoint+" (AWS_ENDPOINT_URL)") || !strings.Contains(lines[0], "make up") {
				t.Errorf("stderr is not the one-line hint naming %s:\n%s", awsEndpoint, stderr)
			}
		})
	}
}
