package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
)

// offlineCommands touch no service: they are not expected to fail when
// the emulator is stopped.
var offlineCommands = map[string]bool{
	"dev":             true, // in-memory queues, filesystem stores
	"version":         true,
	"policy validate": true, // local files
	"console token":   true, // prints or appends to a local file
	// local files only
	"evidence keygen":      true,
	"evidence check-proof": true,
}

// evidenceTestKey is a verifier key (public) of no real log.
var evidenceTestKey = filepath.Join("testdata", "evidence-verifier.key")

// serviceArgs are arguments that get each command that needs AWS or the
// database past its usage checks, to its first request.
var serviceArgs = map[string][]string{
	"bitlog reports":    nil,
	"bitlog results":    nil,
	"bitlog retention":  nil,
	"console":           {"--listen", "127.0.0.1:0"},
	"evidence verify":   {"--log", "s3://evidence/log", "--key", evidenceTestKey},
	"evidence proof":    {"--log", "s3://evidence/log", "--key", evidenceTestKey, "--event", "e1"},
	"evidence events":   {"--log", "s3://evidence/log", "--key", evidenceTestKey},
	"evidence pack":     {"--log", "s3://evidence/log", "--key", evidenceTestKey, "--period", "2026-Q3"},
	"evidence append":   {"--log", "s3://evidence/log"}, // the signer key in the environment
	"content get":       {"acct", "1", "space", "item"},
	"content ls":        {"acct", "1"},
	"content props":     {"acct", "1", "space", "item"},
	"content props set": {"acct", "1", "space", "item", "k=v"},
	"content put":       {"acct", "1", "space", "item", "-"},
	"content restore":   {"acct", "1", "space", "item"},
	"content rm":        {"acct", "1", "space", "item"},
	"content versions":  {"acct", "1", "space", "item"},
	"dev load":          nil,
	"dlq list":          nil,
	"dlq purge":         {"--yes"},
	"dlq redrive":       nil,
	"dlq show":          {"some-id"},
	"enqueue":           {"--type", "NOOP", "--queue", "audit"},
	"fleet":             nil,
	"fixity coverage":   nil,
	"migrate down":      nil,
	"migrate duracloud": {"acct", "dura", "1"},
	"migrate status":    nil,
	"migrate up":        nil,
	"pause":             {"DUP"},
	"policy delete":     {"acct"},
	"policy get":        {"acct"},
	"policy list":       nil,
	"policy put":        {"account1", filepath.Join("..", "..", "testdata", "policies", "account1-duplication-policy.json")},
	"queues":            nil,
	"resume":            {"DUP"},
	"run":               {"--queue", "audit"},
	"runs":              nil,
	"setup":             nil,
	"stats":             nil,
	"stores get":        nil,
	"stores list":       nil,
	"stores put":        {filepath.Join("..", "..", "testdata", "accounts", "accounts.json")},
	"stores validate":   {"--buckets"},
}

// TestEmulatorStopped: with the AWS emulator and PostgreSQL stopped, every
// millctl command that needs them fails within 5 s with one line naming
// the endpoint and what to do, instead of retrying for minutes.
func TestMain(m *testing.M) { testbin.Main(m) }

func TestEmulatorStopped(t *testing.T) {
	if testing.Short() {
		t.Skip("builds millctl")
	}
	for name := range commands {
		_, online := serviceArgs[name]
		if online == offlineCommands[name] {
			t.Errorf("command %q: list it in serviceArgs (with arguments that reach its first request) or offlineCommands", name)
		}
	}
	bin := testbin.Build(t, "millctl")["millctl"]
	awsEndpoint, dbAddr := "http://"+testbin.FreeAddr(t), testbin.FreeAddr(t)
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(),
		"AWS_ENDPOINT_URL=" + awsEndpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"MILL_DATABASE_URL=postgres://postgres:mill@" + dbAddr + "/mill?sslmode=disable",
		derive.EnvSignerKey + "=" + unreachableSignerKey(t),
	}
	for name, args := range serviceArgs {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			cmd := testbin.Run(t, 30*time.Second, testbin.Spec{Path: bin, Args: append(strings.Fields(name), args...), Env: env}) // stdin: the null device
			err, stderr := cmd.Err(), cmd.Stderr()
			took := time.Since(start)
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			t.Logf("millctl %s %s → %v in %v\n%s", name, strings.Join(args, " "), err, took.Round(time.Millisecond), stderr)
			if err == nil {
				t.Fatalf("exit 0, want a failure")
			}
			if took > 5*time.Second {
				t.Errorf("took %v, want at most 5 s", took)
			}
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "millctl "+name+": cannot reach ") || !strings.Contains(lines[0], "make up") {
				t.Errorf("stderr is not the one-line hint:\n%s", stderr)
			}
			if !strings.Contains(lines[0], awsEndpoint+" (AWS_ENDPOINT_URL)") && !strings.Contains(lines[0], "PostgreSQL at "+dbAddr) {
				t.Errorf("the hint names neither the emulator %s nor PostgreSQL at %s", awsEndpoint, dbAddr)
			}
		})
	}
}

// unreachableSignerKey is a new signer key of no real log.
func unreachableSignerKey(t *testing.T) string {
	skey, _, err := evidence.GenerateKey("mill.test/unreachable")
	if err != nil {
		t.Fatal(err)
	}
	return skey
}
