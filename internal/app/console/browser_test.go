package console_test

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/pgbitlog"
	"github.com/millfleet/mill/pkg/changelog/s3changelog"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/s3configstore"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/fleet/dynamofleet"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/reportstore/s3reportstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
)

var screenshots = flag.String("screenshots", "", "write a PNG of each page the browser test visits into this `directory` (the README's, docs/console)")

// chromiumFlags are the flags Debian's chromium runs with here: headless,
// and nothing that reaches for the network on its own.
var chromiumFlags = []chromedp.ExecAllocatorOption{
	chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
	chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
	chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
	chromedp.Flag("no-default-browser-check", true), chromedp.Flag("hide-scrollbars", true),
	chromedp.WindowSize(1280, 820),
}

// chromium returns the browser binary: MILL_CHROMIUM, or Debian's
// chromium. Without it the test fails under CI=true and is skipped
// elsewhere (make test installs it: localstack/up.sh).
func chromium(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	for _, p := range []string{os.Getenv("MILL_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, "Chromium (the Debian chromium package)", fmt.Errorf("not found"))
	return ""
}

// browserEnv is the console on the emulator and PostgreSQL, and a browser.
type browserEnv struct {
	t                     *testing.T
	url                   string
	s3                    *s3.Client
	sqs                   *sqs.Client
	configBucket, prefix  string
	files                 configstore.Store
	exe                   string
	admin, admin2, viewer string
	operator              string
	shots                 int
	bitRun                string
	fleetTable            string
	fleet                 *dynamofleet.Registry
	pool                  *pgxpool.Pool
	bits                  bitlog.Log
}

// newBrowserEnv starts the console; opts change its configuration.
func newBrowserEnv(t *testing.T, opts ...func(*browserEnv, *console.Config)) *browserEnv {
	t.Helper()
	exe := chromium(t)
	cfg := testenv.AWS(t)
	ctx := context.Background()
	b := &browserEnv{t: t, s3: cfg.S3(func(o *s3.Options) { o.UsePathStyle = true }), sqs: cfg.SQS(), prefix: testenv.Prefix(t)}

	// The config bucket, versioned as millctl setup makes it.
	b.configBucket = b.prefix + "config"
	reportsBucket := b.prefix + "reports"
	for _, bk := range []string{b.configBucket, reportsBucket} {
		if _, err := b.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bk)}); err != nil {
			t.Fatal(err)
		}
		testenv.CleanupBucket(t, b.s3, bk)
	}
	if _, err := b.s3.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(b.configBucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	b.files = s3configstore.New(b.s3, b.configBucket, "", 0)
	put := func(name, data string) {
		if _, err := b.files.Put(ctx, name, []byte(data), configstore.Cond{}, configstore.Meta{Author: "setup"}); err != nil {
			t.Fatal(err)
		}
	}
	put(stores.FileName, registryJSON)
	put(policy.FileName("acme"), `{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "1", "destStoreId": "3"}], "docs": [{"srcStoreId": "1", "destStoreId": "2"}]}, "spacesToIgnore": ["scratch"]}`)
	put(policy.AccountsFile, `["acme"]`)

	// The seven queues, some messages in them.
	testenv.CleanupQueues(t, b.sqs, b.prefix)
	for _, k := range queue.AllKeys {
		if _, err := b.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queue.Name(b.prefix, k))}); err != nil {
			t.Fatal(err)
		}
	}
	b.send(queue.KeyDupLow, 6)
	b.send(queue.KeyBit, 3)
	b.send(queue.KeyDeadLetter, 2)

	// The bit log in PostgreSQL with one run, its report in the reports
	// bucket.
	pool := testenv.Pool(t)
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	bits := pgbitlog.New(pool)
	b.pool, b.bits = pool, bits
	b.bitRun = seedRun(t, bits, b.s3, reportsBucket)

	// The fleet registry; the dead-letter queue read as millctl console
	// does (no claim check here).
	ddb := cfg.DynamoDB()
	b.fleetTable = b.prefix + "fleet"
	testenv.CreateTable(t, ddb, dynamofleet.CreateTableInput(b.fleetTable), dynamofleet.TimeToLiveInput(b.fleetTable))
	b.fleet = dynamofleet.New(ddb, b.fleetTable, nil)
	dead, err := (&wiring.Claims{}).DeadLetters(ctx, b.sqs, b.s3, "", deadletter.Config{Prefix: b.prefix, Hold: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	// Users.
	var tokens *auth.Tokens
	tokens, b.admin, b.admin2, b.viewer, b.operator = users(t, "@example.org")
	ccfg := console.Config{
		Auth: tokens, Files: b.files, Changes: s3changelog.New(b.s3, b.configBucket, "console-changes/"),
		Queues: queuestats.New(b.prefix, func(ctx context.Context, _, name string) (queue.Queue, error) {
			return sqsqueue.Open(ctx, b.sqs, name, sqsqueue.Config{})
		}, nil).WithFleet(b.fleet),
		DeadLetters: dead, Fleet: b.fleet,
		BitLog: bits, Reports: s3reportstore.Store{Client: b.s3, Bucket: reportsBucket},
		SampleEvery: 3 * time.Second, HistoryWindow: 2 * time.Minute, Refresh: 5 * time.Second,
		Where:  "config s3://" + b.configBucket + "/ · queues " + b.prefix + "* · bit log in PostgreSQL",
		Logger: slogtest.New(t, slog.LevelInfo),
	}
	for _, o := range opts {
		o(b, &ccfg)
	}
	srv, err := console.New(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() { stop(); <-done })
	b.url = "http://" + ln.Addr().String()

	b.exe = exe
	return b
}

func (b *browserEnv) send(key string, n int) {
	b.t.Helper()
	q, err := sqsqueue.Open(context.Background(), b.sqs, queue.Name(b.prefix, key), sqsqueue.Config{})
	if err != nil {
		b.t.Fatal(err)
	}
	for i := range n {
		if err := q.Send(context.Background(), queue.SendEntry{Body: fmt.Appendf(nil, `{"v":1,"type":"NOOP","attempts":0,"props":{"n":"%d"}}`, i)}); err != nil {
			b.t.Fatal(err)
		}
	}
}

// seedRun records a bit-integrity run of two spaces: one healthy, one with
// a repaired item and an item missing from storage.
func seedRun(t *testing.T, l bitlog.Log, c *s3.Client, bucket string) string {
	t.Helper()
	ctx := context.Background()
	run := time.Now().UTC().Add(-2 * time.Hour).Format("20060102T150405Z")
	for i := range 40 {
		r := bitlog.Row{RunID: run, Account: "acme", StoreID: "1", StoreKind: "s3", SpaceID: "photos",
			ContentID: fmt.Sprintf("2026/img-%04d.jpg", i), Result: bitlog.ResultSuccess, Case: 1, Details: "all agree",
			ContentChecksum: "9e107d9d372bb6826bd81d3542a419d6", StorageChecksum: "9e107d9d372bb6826bd81d3542a419d6"}
		switch i {
		case 7:
			r.Details = "all agree; re-check after case 2: repaired from store 2"
		case 23:
			r.Result, r.Case, r.Details, r.ContentChecksum, r.StorageChecksum = bitlog.ResultError, 8, "removed from storage, not captured; resolution: external: no other store holds a copy", "", ""
		case 31:
			r.Result, r.Case, r.Details = bitlog.ResultFailure, 5, "the content index is wrong or missing; index checksum corrected"
		}
		if err := l.Record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		if err := l.Record(ctx, bitlog.Row{RunID: run, Account: "acme", StoreID: "1", SpaceID: "docs", ContentID: fmt.Sprintf("reports/doc-%04d.pdf", i),
			Result: bitlog.ResultSuccess, Case: 1, Details: "all agree"}); err != nil {
			t.Fatal(err)
		}
	}
	key := "bit-integrity/acme/1/photos/" + run + ".tsv"
	tsv := "date_checked\taccount\tstore_id\tstore_kind\tspace_id\tcontent_id\tresult\tcase\n"
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(tsv)}); err != nil {
		t.Fatal(err)
	}
	for _, rep := range []bitlog.Report{
		{RunID: run, Account: "acme", StoreID: "1", SpaceID: "photos", Result: bitlog.ResultFailure,
			Counts: bitlog.Counts{Total: 40, Success: 38, Failure: 1, Error: 1}, Location: "s3://" + bucket + "/" + key},
		{RunID: run, Account: "acme", StoreID: "1", SpaceID: "docs", Result: bitlog.ResultSuccess, Counts: bitlog.Counts{Total: 12, Success: 12}},
	} {
		if err := l.PutReport(ctx, rep); err != nil {
			t.Fatal(err)
		}
	}
	return run
}

// tab starts a browser of its own (its own profile, so its own cookies):
// one user. Separate processes rather than browser contexts of one:
// headless Chromium refuses to open a tab in a second browser context
// ("no browser is open").
func (b *browserEnv) tab() context.Context {
	b.t.Helper()
	// No UserDataDir: chromedp makes a profile directory of its own per
	// browser and removes it when the browser has exited; Chromium may
	// still write into it for a moment after, which made a t.TempDir()
	// profile fail the test's cleanup ("directory not empty").
	opts := append([]chromedp.ExecAllocatorOption{chromedp.ExecPath(b.exe)}, chromiumFlags...)
	alloc, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	b.t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(alloc)
	b.t.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 60*time.Second)
	b.t.Cleanup(cancel3)
	if err := chromedp.Run(ctx, chromedp.EmulateViewport(1280, 820)); err != nil {
		b.t.Fatalf("start %s: %v", b.exe, err)
	}
	return ctx
}

func (b *browserEnv) run(ctx context.Context, actions ...chromedp.Action) {
	b.t.Helper()
	if err := chromedp.Run(ctx, actions...); err != nil {
		b.t.Fatal(err)
	}
}

// navigate runs actions that navigate and returns the response's status.
func (b *browserEnv) navigate(ctx context.Context, actions ...chromedp.Action) int {
	b.t.Helper()
	resp, err := chromedp.RunResponse(ctx, actions...)
	if err != nil {
		b.t.Fatal(err)
	}
	if resp == nil {
		return 0
	}
	return int(resp.Status)
}

func (b *browserEnv) login(ctx context.Context, tok string) {
	b.t.Helper()
	b.run(ctx, chromedp.Navigate(b.url+"/login"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	b.shot(ctx, "login")
	if st := b.navigate(ctx, chromedp.SendKeys("#token", tok, chromedp.ByQuery), chromedp.Click("#signin", chromedp.ByQuery)); st != 200 {
		b.t.Fatalf("sign-in: status %d", st)
	}
}

// shot saves a screenshot of the viewport when -screenshots is set.
func (b *browserEnv) shot(ctx context.Context, name string) {
	b.t.Helper()
	if *screenshots == "" {
		return
	}
	var png []byte
	b.run(ctx, chromedp.CaptureScreenshot(&png))
	b.shots++
	if err := os.MkdirAll(*screenshots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*screenshots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// eval evaluates JavaScript (awaiting a promise) into res.
func eval(js string, res any) chromedp.Action {
	return chromedp.Evaluate(js, res, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })
}

// setSelects picks options (id, value, id, value…) and then fires one
// change event, as a person's last choice does: the editor checks the form
// on each change and replaces itself, so one change per step keeps a
// second choice from landing in a form that is about to be replaced.
func setSelects(idValues ...string) chromedp.Action {
	js := "(() => { let e;"
	for i := 0; i+1 < len(idValues); i += 2 {
		js += fmt.Sprintf(" e = document.getElementById(%q); e.value = %q;", idValues[i], idValues[i+1])
	}
	js += ` e.dispatchEvent(new Event("change", {bubbles: true})); return true })()`
	return eval(js, nil)
}

func byID(id string) string { return fmt.Sprintf(`[id=%q]`, id) }

// htmxStep runs an action that makes htmx replace part of the page and
// waits until the new part is in place and processed (htmx:afterSettle).
func htmxStep(a chromedp.Action) chromedp.Action {
	return chromedp.Tasks{
		eval(`window.settled = new Promise(r => document.body.addEventListener("htmx:afterSettle", () => r(true), {once: true})); true`, nil),
		a,
		eval(`window.settled`, nil),
	}
}

func TestMain(m *testing.M) { testbin.Main(m) }

// TestBrowser drives the console in Debian's Chromium against the
// emulator and PostgreSQL: a viewer sees no controls and a forged POST is
// refused; an admin adds a space, sees a refused store policy next to the
// field, saves, and the file in S3 and `millctl policy get` show it; a
// second admin saving an older version gets the conflict page; a
// cross-origin POST is refused. With -screenshots DIR it saves each page.
func TestBrowser(t *testing.T) {
	b := newBrowserEnv(t)
	ctx := context.Background()

	// --- A viewer: no controls; a forged POST from the page is refused.
	viewer := b.tab()
	b.login(viewer, b.viewer)
	b.run(viewer, chromedp.Navigate(b.url+"/policies/acme"), chromedp.WaitVisible("#account", chromedp.ByQuery))
	var controls int
	b.run(viewer, eval(`document.querySelectorAll('#edit, #delete, #toggle-listed, form[action$="/listed"], form[action$="/save"]').length`, &controls))
	if controls != 0 {
		t.Errorf("the viewer sees %d editing controls", controls)
	}
	var forged []int
	b.run(viewer, eval(`Promise.all([
		fetch("/policies/acme/save", {method: "POST", body: new URLSearchParams({policy: '{"spaceDuplicationStorePolicies": {}}', base: ""})}),
		fetch("/policies/acme/listed", {method: "POST", body: new URLSearchParams({listed: "false"})}),
		fetch("/policies/acme/delete", {method: "POST", body: new URLSearchParams({confirm: "acme"})}),
	]).then(rs => rs.map(r => r.status))`, &forged))
	if len(forged) != 3 || forged[0] != 403 || forged[1] != 403 || forged[2] != 403 {
		t.Errorf("the viewer's forged POSTs answered %v, want 403 each", forged)
	}

	// --- A second admin opens the editor now (version 1) and previews an
	// edit; they will save it after the first admin saved.
	bo := b.tab()
	b.login(bo, b.admin2)
	b.run(bo, chromedp.Navigate(b.url+"/policies/acme/edit"), chromedp.WaitVisible("#add-default", chromedp.ByQuery))
	b.run(bo, chromedp.Click("#add-default", chromedp.ByQuery), chromedp.WaitVisible(byID("d.0.src"), chromedp.ByQuery))
	if st := b.navigate(bo, chromedp.Click("#preview", chromedp.ByQuery)); st != 200 {
		t.Fatalf("bo's preview: %d", st)
	}

	// --- An admin adds a space with a store policy the rules refuse.
	ana := b.tab()
	b.login(ana, b.admin)
	b.run(ana, chromedp.Navigate(b.url+"/policies"), chromedp.WaitVisible("#accounts", chromedp.ByQuery))
	b.shot(ana, "policies")
	b.run(ana, chromedp.Navigate(b.url+"/policies/acme"), chromedp.WaitVisible("#edit", chromedp.ByQuery))
	b.shot(ana, "policy")
	b.run(ana, chromedp.Click("#edit", chromedp.ByQuery), chromedp.WaitVisible("#add-space", chromedp.ByQuery))
	// Rows are sorted: docs (0), photos (1); the new one is row 2,
	// starting with the store policy 1→2; "+ store policy" adds 1→3.
	b.run(ana, htmxStep(chromedp.Click("#add-space", chromedp.ByQuery)),
		chromedp.SendKeys("#s2", "video", chromedp.ByQuery), htmxStep(eval(`document.getElementById("s2").blur(); true`, nil)),
		htmxStep(chromedp.Click("#add-rule-2", chromedp.ByQuery)))
	// 1→2 with 2→1 is a cycle: pkg/policy refuses it, next to the row.
	b.run(ana, htmxStep(setSelects("s2.1.src", "2", "s2.1.dst", "1")))
	var problem string
	b.run(ana, chromedp.Text("#row-2 ul.problems", &problem, chromedp.ByQuery))
	if !strings.Contains(problem, "cycle") {
		t.Fatalf("the store policies 1→2 and 2→1 of one space: the row says %q, want a cycle refused", problem)
	}
	b.shot(ana, "editor")
	// Remove it, preview, save.
	b.run(ana, htmxStep(chromedp.Click(`button[value="remove-rule:2:1"]`, chromedp.ByQuery)))
	var rows int
	b.run(ana, eval(`document.querySelectorAll("#row-2 select").length`, &rows))
	if rows != 2 {
		t.Fatalf("after removing the refused store policy row 2 has %d selects, want 2", rows)
	}
	if st := b.navigate(ana, chromedp.Click("#preview", chromedp.ByQuery)); st != 200 {
		t.Fatalf("preview: %d", st)
	}
	var diff string
	b.run(ana, chromedp.Text("#diff", &diff, chromedp.ByQuery))
	if !strings.Contains(diff, `+ space "video": 1→2`) {
		t.Fatalf("preview diff %q", diff)
	}
	b.shot(ana, "preview")
	if st := b.navigate(ana, chromedp.Click("#save", chromedp.ByQuery)); st != 200 {
		t.Fatalf("save: %d", st)
	}
	var notice string
	b.run(ana, chromedp.Text("#notice", &notice, chromedp.ByQuery))
	if !strings.Contains(notice, "Saved") {
		t.Fatalf("after the save: %q", notice)
	}
	// The file in S3, and millctl policy get.
	p, err := policy.NewS3(b.s3, b.configBucket, "").Policy(ctx, "acme")
	if err != nil || len(p.StorePolicies("video")) != 1 || p.StorePolicies("video")[0] != (policy.StorePolicy{SrcStoreID: "1", DestStoreID: "2"}) {
		t.Fatalf("the file in S3: %+v, %v", p, err)
	}
	bin := testbin.Build(t, "millctl")["millctl"]
	cmd := testbin.Run(t, time.Minute, testbin.Spec{Path: bin, Args: []string{"policy", "get", "--config-bucket", b.configBucket, "acme"}})
	if err := cmd.Err(); err != nil || !strings.Contains(cmd.Output(), `"video": [`) {
		t.Fatalf("millctl policy get: %v\n%s", err, cmd.Output())
	}

	// --- The second admin saves the older version: a conflict, nothing
	// lost.
	if st := b.navigate(bo, chromedp.Click("#save", chromedp.ByQuery)); st != http.StatusConflict {
		t.Fatalf("bo's stale save: status %d, want 409", st)
	}
	var author string
	b.run(bo, chromedp.Text("#other-author", &author, chromedp.ByQuery))
	if author != "ana@example.org" {
		t.Errorf("the conflict page names %q", author)
	}
	b.shot(bo, "conflict")
	if p, _ := policy.NewS3(b.s3, b.configBucket, "").Policy(ctx, "acme"); len(p.StorePolicies("video")) != 1 || len(p.Default) != 0 {
		t.Fatalf("the stale save changed the file: %+v", p)
	}

	// --- A cross-origin POST: a page elsewhere submits a form to the
	// console in the admin's browser.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/go.js" {
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, `document.getElementById("f").submit();`)
			return
		}
		fmt.Fprintf(w, `<!doctype html><form id="f" method="post" action="%s/policies/acme/listed"><input name="listed" value="false"></form><script src="/go.js"></script>`, b.url)
	}))
	defer evil.Close()
	st := b.navigate(ana, chromedp.Navigate(evil.URL), chromedp.WaitVisible("section.error", chromedp.ByQuery))
	var refusal, where string
	b.run(ana, chromedp.Text("h1", &refusal, chromedp.ByQuery), chromedp.Location(&where))
	if !strings.Contains(refusal, "Cross-origin request refused") || !strings.HasPrefix(where, b.url) {
		t.Errorf("cross-origin POST: %d %q at %s", st, refusal, where)
	}
	if l, _ := policy.NewS3(b.s3, b.configBucket, "").Accounts(ctx); len(l) != 1 {
		t.Errorf("the cross-origin POST unlisted the account: %v", l)
	}

	// --- The other pages, as the admin sees them.
	b.send(queue.KeyDupLow, 4)
	b.send(queue.KeyDupHigh, 2)
	for _, pg := range []struct{ path, wait, name string }{
		{"/policies/acme/history", "#versions", "history"},
		{"/bit", "#runs", "bit-runs"},
		{"/bit/space?run=" + b.bitRun + "&account=acme&store=1&space=photos", "#cases", "bit-space"},
		{"/bit/results?result=FAILURE", "#results", "bit-results"},
		{"/changes", "#changes", "changes"},
		{"/queues", "#queue-table", "queues"},
	} {
		if st := b.navigate(ana, chromedp.Navigate(b.url+pg.path)); st != 200 {
			t.Errorf("%s: status %d", pg.path, st)
		}
		b.run(ana, chromedp.WaitVisible(pg.wait, chromedp.ByQuery))
		b.shot(ana, pg.name)
	}
	// The four messages sent above show within a refresh or two: the page
	// refreshes itself (htmx) from the console's shared read.
	if err := chromedp.Run(ana, chromedp.Poll(`document.querySelector("#q-dup-low .visible").textContent === "10"`, nil,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		var dupLow string
		_ = chromedp.Run(ana, chromedp.Text("#q-dup-low .visible", &dupLow, chromedp.ByQuery))
		t.Errorf("dup-low visible %q, want 10 (%v)", dupLow, err)
	}
	var changes string
	b.run(ana, chromedp.Navigate(b.url+"/changes"), chromedp.Text("#changes", &changes, chromedp.ByQuery))
	if !strings.Contains(changes, "ana@example.org") || !strings.Contains(changes, "policy.save") {
		t.Errorf("the change log page: %q", changes)
	}
	if *screenshots != "" {
		t.Logf("%d screenshots in %s", b.shots, *screenshots)
	}
}

// TestBrowserDeadLettersAndFleet drives the operator's pages in Chromium
// against the emulator with a real Workman: the dead-letter page lists
// what the scan found; an operator opens a dead letter, runs the dry run,
// redrives it, and Workman processes it; the fleet page shows that
// Workman and its count; the operator pauses DUP and resumes it; the
// change log names them; a viewer has no controls and a forged POST is
// refused.
func TestBrowserDeadLettersAndFleet(t *testing.T) {
	b := newBrowserEnv(t)
	ctx := context.Background()
	bins := testbin.Build(t, "workman")
	record := filepath.Join(t.TempDir(), "noop.record")

	// Dead letters: a NOOP task from dup-low (the one redriven), and
	// others Workman does not serve here.
	dlq, err := sqsqueue.Open(ctx, b.sqs, queue.Name(b.prefix, queue.KeyDeadLetter), sqsqueue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	letter := func(typ task.Type, key, id, errText string, ago time.Duration) queue.SendEntry {
		body, err := task.Encode(task.New(typ, map[string]string{"id": id, "account": "acme", "spaceId": "photos"}), task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		tk, _ := task.Decode(body)
		tk.Attempts = 2
		body, _ = task.Encode(tk, task.FormatJSON)
		en, err := deadletter.Encode(&deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: errText, TaskType: typ,
			Processor: strings.ToLower(string(typ)), SourceQueue: queue.Name(b.prefix, key), Attempts: 3, Worker: "ip-10-0-0-7-4121",
			Time: now.Add(-ago), MessageID: "src-" + id, ReceiveCount: 3})
		if err != nil {
			t.Fatal(err)
		}
		return en
	}
	if err := dlq.Send(ctx,
		letter(task.TypeNoop, queue.KeyDupLow, "redrive-me", "noop: the store did not answer (injected)", 3*time.Minute),
		letter(task.TypeDup, queue.KeyDupHigh, "img-0001.jpg", "dup: copy acme/photos/img-0001.jpg 1→2: AccessDenied: the destination bucket refuses PutObject", 40*time.Minute),
		letter(task.TypeDup, queue.KeyDupHigh, "img-0002.jpg", "dup: copy acme/photos/img-0002.jpg 1→2: AccessDenied: the destination bucket refuses PutObject", 39*time.Minute),
		letter(task.TypeDup, queue.KeyDupLow, "doc-17.pdf", "dup: copy acme/docs/doc-17.pdf 1→3: context deadline exceeded", 2*time.Hour),
		letter(task.TypeBit, queue.KeyBit, "img-0444.jpg", "bit: get acme/photos/img-0444.jpg from store 2: SlowDown: please reduce your request rate", 5*time.Hour),
	); err != nil {
		t.Fatal(err)
	}

	// A real Workman on dup-low, serving NOOP, registered in the fleet.
	testbin.Start(t, testbin.Spec{Path: bins["workman"], Args: []string{"--worker-id", "console-wm", "--queue-prefix", b.prefix, "--queues", queue.KeyDupLow,
		"--task-types", "NOOP", "--fleet-table", b.fleetTable, "--heartbeat-interval", "1s", "--http-addr", "", "--cloudwatch=false",
		"--claims-bucket", "", "--instance-metadata=false", "--receive-wait", "1s", "--grace-period", "5s", "--noop-record", record},
		Env: testbin.Env()})

	// --- A viewer: the pages without controls; a forged POST refused.
	viewer := b.tab()
	b.login(viewer, b.viewer)
	b.run(viewer, chromedp.Navigate(b.url+"/dead-letters"), chromedp.WaitVisible("#dl-table", chromedp.ByQuery),
		chromedp.Navigate(b.url+"/fleet"), chromedp.WaitVisible("#workers", chromedp.ByQuery))
	var controls int
	b.run(viewer, eval(`document.querySelectorAll('#pause-form, button[id^="resume-"]').length`, &controls))
	var forged []int
	b.run(viewer, eval(`Promise.all([
		fetch("/fleet/pause", {method: "POST", body: new URLSearchParams({target: "type:DUP"})}),
		fetch("/dead-letters/redrive", {method: "POST", body: new URLSearchParams({type: "NOOP"})}),
		fetch("/dead-letters/purge", {method: "POST", body: new URLSearchParams({confirm: "purge", expected: "9"})}),
	]).then(rs => rs.map(r => r.status))`, &forged))
	if controls != 0 || len(forged) != 3 || forged[0] != 403 || forged[1] != 403 || forged[2] != 403 {
		t.Errorf("the viewer sees %d fleet controls; forged POSTs answered %v, want 403 each", controls, forged)
	}

	// --- The operator: the list. The console's first scan may have
	// started before the letters above were sent; they show at the next
	// scan, so the operator waits for the first to end (the page refreshes
	// itself while it runs) and asks for a rescan.
	op := b.tab()
	b.login(op, b.operator)
	b.run(op, chromedp.Navigate(b.url+"/dead-letters"), chromedp.WaitVisible("#dl-table", chromedp.ByQuery),
		chromedp.WaitVisible("#rescan", chromedp.ByQuery))
	if st := b.navigate(op, chromedp.Click("#rescan", chromedp.ByQuery)); st != 200 {
		t.Fatalf("rescan: %d", st)
	}
	if err := chromedp.Run(op, chromedp.Poll(`(document.querySelector("#dl-looked") || {}).textContent === "7"`, nil,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		var scan string
		_ = chromedp.Run(op, chromedp.Text("#dl-scan", &scan, chromedp.ByQuery))
		t.Fatalf("the scan did not show 7 dead letters: %q (%v)", scan, err)
	}
	b.run(op, chromedp.Navigate(b.url+"/dead-letters"), chromedp.WaitVisible("#dl-table", chromedp.ByQuery))
	b.shot(op, "dead-letters")
	// Filter NOOP from dup-low, open the one, dry run, redrive.
	b.run(op, setSelects("f-type", "NOOP", "f-source", queue.KeyDupLow))
	if st := b.navigate(op, chromedp.Click("#filter", chromedp.ByQuery)); st != 200 {
		t.Fatalf("filter: %d", st)
	}
	var matching string
	b.run(op, chromedp.Text("#dl-matching", &matching, chromedp.ByQuery))
	if matching != "1" {
		t.Fatalf("NOOP dead letters from dup-low: %s, want 1", matching)
	}
	if st := b.navigate(op, chromedp.Click(`#dl-table a[href^="/dead-letters/"]`, chromedp.ByQuery)); st != 200 {
		t.Fatalf("open the dead letter: %d", st)
	}
	var prov string
	b.run(op, chromedp.Text("#provenance", &prov, chromedp.ByQuery))
	if !strings.Contains(prov, "src-redrive-me") || !strings.Contains(prov, queue.Name(b.prefix, queue.KeyDupLow)) {
		t.Fatalf("provenance: %q", prov)
	}
	b.shot(op, "dead-letter")
	if st := b.navigate(op, chromedp.Click("#redrive-one", chromedp.ByQuery)); st != 200 {
		t.Fatalf("dry run: %d", st)
	}
	var would string
	b.run(op, chromedp.Text("#would", &would, chromedp.ByQuery))
	if would != "1" {
		t.Fatalf("the dry run would redrive %s, want 1", would)
	}
	b.shot(op, "redrive")
	if st := b.navigate(op, chromedp.Click("#confirm-redrive", chromedp.ByQuery)); st != 200 {
		t.Fatalf("redrive: %d", st)
	}
	if err := chromedp.Run(op, chromedp.Poll(`(document.querySelector("#dl-job") || {}).textContent.includes("1 redriven")`, nil,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the redrive did not finish on the page: %v", err)
	}
	// Workman processes it.
	testbin.WaitFor(t, 60*time.Second, "Workman to process the redriven task", func() bool {
		b, _ := os.ReadFile(record)
		return strings.Contains(string(b), "redrive-me")
	})

	// --- The fleet: the Workman with its count (the six NOOP tasks the
	// env put on dup-low and the redriven one), beside a worker that
	// stopped beating five minutes ago (lost); pause DUP, resume it.
	beat := time.Now().Add(-5 * time.Minute)
	if err := b.fleet.Put(ctx, fleet.Worker{ID: "ip-10-0-1-9-2207", Identity: process.Identity{Hostname: "ip-10-0-1-9", Started: beat.Add(-3 * time.Hour)},
		InstanceID: "i-0a1b2c3d4e5f67890", Zone: "us-east-1b", Version: "v1.4.0", Heartbeat: beat, Interval: 30 * time.Second, Expires: beat.Add(24 * time.Hour),
		Queues: []string{queue.Name(b.prefix, queue.KeyDupHigh), queue.Name(b.prefix, queue.KeyBit)}, Pool: 32, Held: 4,
		Running: map[string]int{"DUP": 3, "BIT": 1}, Counts: map[string]fleet.Counts{"DUP": {Processed: 18230, Failed: 12, DeadLettered: 3}, "BIT": {Processed: 9120}},
		State: fleet.StateRunning}); err != nil {
		t.Fatal(err)
	}
	b.run(op, chromedp.Navigate(b.url+"/fleet"), chromedp.WaitVisible("#workers", chromedp.ByQuery))
	var lost int
	b.run(op, eval(`document.querySelectorAll("#workers tr.lost").length`, &lost))
	if lost != 1 {
		t.Errorf("%d lost rows marked, want 1", lost)
	}
	if err := chromedp.Run(op, chromedp.Poll(`(document.querySelector("#w-console-wm .processed") || {}).textContent === "7"`, nil,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		var rows string
		_ = chromedp.Run(op, chromedp.Text("#workers", &rows, chromedp.ByQuery))
		t.Fatalf("the fleet page does not show the Workman's processed task: %q (%v)", rows, err)
	}
	b.run(op, setSelects("pause-target", "type:DUP"), chromedp.SendKeys("#pause-reason", "storage maintenance", chromedp.ByQuery))
	if st := b.navigate(op, chromedp.Click("#pause", chromedp.ByQuery)); st != 200 {
		t.Fatalf("pause: %d", st)
	}
	var pauses string
	b.run(op, chromedp.Text("#pauses", &pauses, chromedp.ByQuery))
	if ps, err := b.fleet.Pauses(ctx); err != nil || len(ps) != 1 || ps[0].Key() != "type:DUP" || ps[0].By != "oli@example.org" ||
		!strings.Contains(pauses, "storage maintenance") {
		t.Fatalf("after pause: the page says %q; the registry %+v, %v", pauses, ps, err)
	}
	b.shot(op, "fleet")
	if st := b.navigate(op, chromedp.Click("#resume-type-DUP", chromedp.ByQuery)); st != 200 {
		t.Fatalf("resume: %d", st)
	}
	if ps, err := b.fleet.Pauses(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("after resume: %+v, %v", ps, err)
	}

	// The change log names the operator.
	var changes string
	b.run(op, chromedp.Navigate(b.url+"/changes"), chromedp.Text("#changes", &changes, chromedp.ByQuery))
	for _, want := range []string{"oli@example.org", "dlq.redrive", "dlq.redrive.result", "fleet.pause", "fleet.resume"} {
		if !strings.Contains(changes, want) {
			t.Errorf("the change log page has no %q", want)
		}
	}
}
