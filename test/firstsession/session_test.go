package firstsession

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/app/devmode"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

const (
	beginMarker = "<!-- first-session:begin -->"
	endMarker   = "<!-- first-session:end -->"
)

// sessionBlock returns the shell block between the README's markers.
func sessionBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testbin.ModuleRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, beginMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		t.Fatalf("README.md has no first session between %q and %q", beginMarker, endMarker)
	}
	block := strings.TrimSpace(s[i+len(beginMarker) : j])
	block, ok := strings.CutPrefix(block, "```sh\n")
	if !ok || !strings.HasSuffix(block, "```") {
		t.Fatalf("the first session is not one ```sh block:\n%s", block)
	}
	return strings.TrimSuffix(block, "```")
}

// TestReadmeFirstSession runs the README's first session (after `make up`,
// the environment and `make build`, which the test provides) with every
// name unique to this run through the MILL_* variables, then checks that
// every item of the demo is on every destination of its store policies
// and was found healthy by the bit-integrity run, on every store.
func TestReadmeFirstSession(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole mill on the emulator")
	}
	block := sessionBlock(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	m := newMill(t)
	cfg, env, names, bins := m.cfg, m.env, m.names, m.bins
	s3c := cfg.S3()
	work := t.TempDir()
	if err := os.Symlink(m.binDir, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	// A lean run: 10 items, not dev load's 50.
	env = append(env, "MILL_ITEMS=10")

	// The session, in its own process group so nothing it started
	// outlives the test.
	// Each command is echoed with its time (bash reads no PS4 from the
	// environment when run as root).
	// A process the session left running (a failed step stops bash -e
	// before kill %1) keeps the output open: Wait gives up on it.
	start := time.Now()
	sh := testbin.Run(t, 8*time.Minute, testbin.Spec{Path: "bash", Args: []string{"-e", "-c", "PS4='+ $(date +%T) '; set -x\n" + block},
		Dir: work, Env: env, Setpgid: true, Grace: 5 * time.Second})
	err := sh.Err()
	t.Logf("the first session, in %v:\n%s", time.Since(start).Round(time.Second), sh.Output())
	if log, err := os.ReadFile(filepath.Join(work, "workman.log")); err == nil && t.Failed() || err == nil && !sh.Cmd.ProcessState.Success() {
		t.Logf("workman.log:\n%s", log)
	}
	if err != nil {
		t.Fatalf("the first session failed: %v", err)
	}

	// Every item duplicated to every destination.
	reg, err := stores.LoadS3(ctx, s3c, names["MILL_CONFIG_BUCKET"], stores.FileName)
	if err != nil {
		t.Fatal(err)
	}
	opener := wiring.NewOpener(reg, &cfg.AWS, cfg.EndpointOverride)
	rep, err := devmode.CheckReplicas(ctx, reg, policy.NewS3(s3c, names["MILL_CONFIG_BUCKET"], ""), opener.Open)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 || rep.Matching == 0 {
		t.Fatalf("duplication: %d replicas match, problems: %v", rep.Matching, rep.Problems)
	}
	items := 0
	for _, a := range reg.Accounts {
		pr, err := opener.Open(ctx, a.ID, a.Primary().ID)
		if err != nil {
			t.Fatal(err)
		}
		spaces, err := pr.ListSpaces(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, sp := range spaces {
			for _, err := range storage.Walk(ctx, pr, sp, "", 0) {
				if err != nil {
					t.Fatal(err)
				}
				items++
			}
		}
	}

	// Every copy checked, and healthy: one result per item per store, one
	// SUCCESS report per space per store.
	millctl := func(args ...string) []map[string]any {
		c := testbin.Run(t, 2*time.Minute, testbin.Spec{Path: bins["millctl"], Args: args, Env: env})
		if err := c.Err(); err != nil {
			t.Fatalf("millctl %s: %v", strings.Join(args, " "), err)
		}
		b := c.Stdout()
		var rows []map[string]any
		sc := bufio.NewScanner(strings.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("millctl %s: %v in %q", strings.Join(args, " "), err, sc.Text())
			}
			rows = append(rows, m)
		}
		return rows
	}
	results := millctl("bitlog", "results", "--json", "--limit", "0")
	if want := items + rep.Matching; len(results) != want {
		t.Errorf("%d bit check results, want %d (%d items on the primaries, %d replicas)", len(results), want, items, rep.Matching)
	}
	for _, r := range results {
		if r["result"] != "SUCCESS" || r["case"] != float64(1) {
			t.Errorf("not healthy: %v", r)
		}
	}
	reports := millctl("bitlog", "reports", "--json", "--limit", "0")
	if want := devmode.StoreCopies(devmode.DemoPolicies()); len(reports) != want {
		t.Errorf("%d reports, want one per space per store: %d", len(reports), want)
	}
	for _, r := range reports {
		if r["Result"] != "SUCCESS" && r["result"] != "SUCCESS" {
			t.Errorf("report not SUCCESS: %v", r)
		}
	}
	t.Logf("%d items, %d replicas, %d results, %d reports", items, rep.Matching, len(results), len(reports))
}

// mill is a local mill's environment for one test: the binaries, and every
// name the binaries use unique to the test (removed after it) through the
// MILL_* variables.
type mill struct {
	cfg    *awsconfig.Config
	env    []string
	names  map[string]string
	bins   map[string]string
	binDir string
}

func newMill(t *testing.T) *mill {
	t.Helper()
	cfg := testenv.AWS(t)
	dbURL := testenv.Schema(t)
	bins := testbin.Build(t, "millctl", "workman", "dupproducer", "bitproducer")
	p := testenv.Prefix(t)
	names := map[string]string{
		"MILL_QUEUE_PREFIX":   p,
		"MILL_CONFIG_BUCKET":  p + "config",
		"MILL_STATE_BUCKET":   p + "state",
		"MILL_CLAIMS_BUCKET":  p + "state",
		"MILL_REPORTS_BUCKET": p + "reports",
		"MILL_AUDIT_TABLE":    p + "audit-log",
		"MILL_LEASE_TABLE":    p + "leases",
		"MILL_FLEET_TABLE":    p + "fleet",
		"MILL_DEMO_BUCKETS":   p + "demo-",
		"MILL_DATABASE_URL":   dbURL,
		"MILL_HTTP_ADDR":      "127.0.0.1:0",
	}
	testenv.CleanupQueues(t, cfg.SQS(), p)
	s3c, ddb := cfg.S3(), cfg.DynamoDB()
	buckets := []string{names["MILL_CONFIG_BUCKET"], names["MILL_STATE_BUCKET"], names["MILL_REPORTS_BUCKET"]}
	for _, a := range devmode.DemoStores {
		for _, id := range a.Stores {
			buckets = append(buckets, names["MILL_DEMO_BUCKETS"]+a.Account+"-"+id)
		}
	}
	for _, b := range buckets {
		testenv.CleanupBucket(t, s3c, b)
	}
	for _, v := range []string{"MILL_AUDIT_TABLE", "MILL_LEASE_TABLE", "MILL_FLEET_TABLE"} {
		testenv.CleanupTable(t, ddb, names[v])
	}
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MILL_") {
			env = append(env, kv)
		}
	}
	for k, v := range names {
		env = append(env, k+"="+v)
	}
	return &mill{cfg: cfg, env: env, names: names, bins: bins, binDir: filepath.Dir(bins["millctl"])}
}
