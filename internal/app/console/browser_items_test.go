package console_test

import (
	"context"
	"crypto/md5"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/dynamoauditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/contentindex/pgcontentindex"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/pgruns"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/spacestats/pgspacestats"
	"github.com/millfleet/mill/pkg/task"
)

// axeSource is axe-core's script: MILL_AXE_CORE, or the copy
// localstack/up.sh installs under .local/npm. Without it the test fails
// under CI=true and is skipped elsewhere.
func axeSource(t *testing.T) string {
	t.Helper()
	p := os.Getenv("MILL_AXE_CORE")
	if p == "" {
		_, file, _, _ := runtime.Caller(0)
		p = filepath.Join(filepath.Dir(file), "..", "..", "..", ".local", "npm", "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(p)
	if err != nil {
		testenv.Unavailable(t, "axe-core (npm; localstack/up.sh installs it)", err)
	}
	return string(b)
}

// checkPage runs axe-core on the page the tab shows and fails the test on
// a serious or critical violation; then, at 390 px wide, fails it when the
// page is wider than the screen; then restores the viewport.
func (b *browserEnv) checkPage(ctx context.Context, axe, name string) {
	b.t.Helper()
	var violations []string
	b.run(ctx, eval(axe+"; true", nil), eval(`axe.run(document).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => v.impact + " " + v.id + ": " + v.help + " — " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", ")))`, &violations))
	for _, v := range violations {
		b.t.Errorf("%s: axe-core: %s", name, v)
	}
	var over int
	b.run(ctx, chromedp.EmulateViewport(390, 844), eval(`new Promise(r => requestAnimationFrame(() => r(document.documentElement.scrollWidth - window.innerWidth)))`, &over))
	if over > 0 {
		b.t.Errorf("%s: at 390 px wide the page is %d px wider than the screen", name, over)
	}
	if name == "home" {
		b.shot(ctx, name+"-390")
	}
	b.run(ctx, chromedp.EmulateViewport(1280, 820))
}

// TestBrowserHomeItemsStatistics drives the home, item and statistics
// pages in Chromium against the emulator and PostgreSQL: the home page
// shows an injected failure, dead letters and a lost worker, each link
// leading to its detail; an item found by prefix shows its three copies
// with their checksums and last verdicts; an admin restores a deleted
// copy and the change log records it, a viewer sees no restore control
// and gets 403 on a forged POST; the statistics page matches millctl
// stats; hostile names render inert; and every page the console serves
// has no serious or critical axe-core violation and fits 390 px.
func TestBrowserHomeItemsStatistics(t *testing.T) {
	const hostile0 = `2026/<script>window.pwned=1</script>`
	axe := axeSource(t)
	opener := fsOpener{t.TempDir()}
	var auditLog *dynamoauditlog.Log
	b := newBrowserEnv(t, func(b *browserEnv, c *console.Config) {
		ddb := testenv.AWS(t).DynamoDB()
		testenv.CreateTable(t, ddb, dynamoauditlog.CreateTableInput(b.prefix+"audit"), nil)
		auditLog = dynamoauditlog.New(ddb, b.prefix+"audit")
		c.Audit = auditLog
		audit, err := sqsqueue.Open(context.Background(), b.sqs, queue.Name(b.prefix, queue.KeyAudit), sqsqueue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		c.Index, c.Stats, c.Stores, c.AuditQueue = pgcontentindex.New(b.pool), pgspacestats.New(b.pool), opener, audit
		c.Runs = pgruns.New(b.pool)
		c.Evidence = evidenceLog(t, itemID)
	})
	ctx := context.Background()
	index, stats := pgcontentindex.New(b.pool), pgspacestats.New(b.pool)

	// One item on stores 1, 2 and 3, verified on each, then deleted from
	// store 3 (so store 3 keeps it in its trash); hostile names beside it.
	now := time.Now().UTC()
	putCopies(t, opener, index, b.bits, b.bitRun, now.Add(-time.Hour), now.Add(-90*time.Minute))
	p3, _ := opener.Open(ctx, "acme", "3")
	if err := p3.Delete(ctx, "photos", itemID); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"1", "2"} {
		if _, err := auditLog.Put(ctx, auditlog.Entry{Account: "acme", StoreID: st, SpaceID: "photos", ContentID: itemID, Action: task.ActionAddContent,
			UserID: "ingest@example.org", Time: now.Add(-time.Hour), Checksum: fmt.Sprintf("%x", md5.Sum(itemBody))}); err != nil {
			t.Fatal(err)
		}
	}
	hostile := []string{hostile0, `2026/<img src=x onerror="window.pwned=1">`, "2026/javascript:window.pwned=1",
		"2026/\u202Egpj.exe", "2026/" + strings.Repeat("x", 10_000)}
	for _, id := range hostile {
		if _, err := index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: id},
			Checksum: "0cc175b9c0f1b6a831c399e269772661", Modified: now}); err != nil {
			t.Fatal(err)
		}
	}
	// Two statistics runs.
	for i, run := range []string{"20260401T000000Z", "20260501T000000Z"} {
		for _, sp := range []struct{ store, space string }{{"1", "photos"}, {"2", "photos"}, {"1", "docs"}} {
			if err := stats.Put(ctx, spacestats.Stats{RunID: run, Account: "acme", StoreID: sp.store, SpaceID: sp.space,
				Items: int64(1000*(i+1) + len(sp.space)), Bytes: int64(1<<30*(i+1) + len(sp.store)), Measured: now.Add(time.Duration(i-2) * 24 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A bit run in progress: 1 of 4 tasks dead-lettered.
	runStore := pgruns.New(b.pool)
	if err := runStore.Start(ctx, runs.Run{Producer: runs.ProducerBit, ID: "20260501T030000Z", Scope: "1 account, 2 spaces", Started: now.Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := runStore.Listed(ctx, runs.ProducerBit, "20260501T030000Z", 4, now.Add(-50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := runStore.Record(ctx, runs.Outcome{Producer: runs.ProducerBit, RunID: "20260501T030000Z", Key: "k1", State: runs.StateDead,
		Type: task.TypeBit, Item: "acme/1/photos/" + hostile0, Error: "boom", Attempts: 3, At: now.Add(-30 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	// A worker that stopped beating five minutes ago: lost.
	beat := now.Add(-5 * time.Minute)
	if err := b.fleet.Put(ctx, fleet.Worker{ID: "ip-10-0-1-9-2207", Identity: process.Identity{Hostname: "ip-10-0-1-9", Started: beat.Add(-3 * time.Hour)}, Version: "v1.4.0",
		Heartbeat: beat, Interval: 30 * time.Second, Expires: beat.Add(24 * time.Hour), State: fleet.StateRunning}); err != nil {
		t.Fatal(err)
	}

	// --- The home page, as a viewer: the failure, the dead letters (the
	// env sent 2) and the lost worker, each linked to its page.
	viewer := b.tab()
	b.login(viewer, b.viewer)
	b.run(viewer, chromedp.Navigate(b.url+"/"), chromedp.WaitVisible("#figures", chromedp.ByQuery))
	var verdict string
	b.run(viewer, chromedp.Text("#verdict", &verdict, chromedp.ByQuery))
	for _, want := range []string{"Not everything is safe", "1 bit-integrity failure is open", "2 dead letters wait", "1 worker is lost"} {
		if !strings.Contains(verdict, want) {
			t.Errorf("the home page's verdict %q lacks %q", verdict, want)
		}
	}
	b.shot(viewer, "home")
	for _, l := range []struct{ fig, n, wait string }{
		{"failures", "1", `#results`}, {"dead-letters", "2", "#dl-table"}, {"lost", "1", "#workers tr.lost"},
	} {
		b.run(viewer, chromedp.Navigate(b.url+"/"), chromedp.WaitVisible("#fig-"+l.fig, chromedp.ByQuery))
		var n string
		b.run(viewer, chromedp.Text("#fig-"+l.fig+" .n", &n, chromedp.ByQuery))
		if n != l.n {
			t.Errorf("home: %s shows %q, want %s", l.fig, n, l.n)
		}
		if st := b.navigate(viewer, chromedp.Click("#fig-"+l.fig+" a", chromedp.ByQuery)); st != 200 {
			t.Errorf("home: the %s link: status %d", l.fig, st)
		}
		b.run(viewer, chromedp.WaitVisible(l.wait, chromedp.ByQuery))
	}
	// The run in progress, linked to its page.
	b.run(viewer, chromedp.Navigate(b.url+"/"), chromedp.WaitVisible("#runs-in-progress progress", chromedp.ByQuery))
	if st := b.navigate(viewer, chromedp.Click(`#runs-in-progress a[href="/runs/bitproducer/20260501T030000Z"]`, chromedp.ByQuery)); st != 200 {
		t.Errorf("home: the run's link: status %d", st)
	}
	var deadRow string
	b.run(viewer, chromedp.Text("#run-failures tbody tr", &deadRow, chromedp.ByQuery))
	b.shot(viewer, "producer-run")
	if !strings.Contains(deadRow, "dead") || !strings.Contains(deadRow, "<script>window.pwned=1</script>") {
		t.Errorf("the run page's failure: %q", deadRow)
	}
	var failed int
	b.run(viewer, chromedp.Navigate(b.url+"/"), chromedp.WaitVisible("#fig-failures", chromedp.ByQuery),
		chromedp.Click("#fig-failures a", chromedp.ByQuery), chromedp.WaitVisible("#results", chromedp.ByQuery),
		eval(`document.querySelectorAll("#results tbody tr").length`, &failed))
	if failed != 1 {
		t.Errorf("the failures link shows %d results, want the 1 failure", failed)
	}

	// --- Items, as the viewer: search by prefix, open the item.
	b.run(viewer, chromedp.Navigate(b.url+"/items"), chromedp.WaitVisible("#search-form", chromedp.ByQuery),
		setSelects("s-account", "acme"), chromedp.SendKeys("#s-space", "photos", chromedp.ByQuery), chromedp.SendKeys("#s-prefix", "2026/img-00", chromedp.ByQuery))
	if st := b.navigate(viewer, chromedp.Click("#search", chromedp.ByQuery)); st != 200 {
		t.Fatalf("search: %d", st)
	}
	var found int
	b.run(viewer, eval(`document.querySelectorAll("#items tbody tr").length`, &found))
	if found != 3 {
		t.Fatalf("the prefix search found %d rows, want the item's 3 copies", found)
	}
	b.shot(viewer, "items")
	if st := b.navigate(viewer, chromedp.Click(`#items a[href^="/item?"]`, chromedp.ByQuery)); st != 200 {
		t.Fatalf("open the item: %d", st)
	}
	var copies []string
	b.run(viewer, chromedp.WaitVisible("#copies", chromedp.ByQuery),
		eval(`[...document.querySelectorAll("#copies tr.copy")].map(tr => tr.querySelector(".md5").textContent + " | " + tr.querySelector(".last-verdict").textContent + " | " + tr.querySelector(".last-audit").textContent)`, &copies))
	sum := fmt.Sprintf("%x", md5.Sum(itemBody))
	if len(copies) != 3 {
		t.Fatalf("the item page shows %d copies, want 3", len(copies))
	}
	for i, c := range copies {
		if !strings.Contains(c, sum) || !strings.Contains(c, "SUCCESS") || !strings.Contains(c, "read") {
			t.Errorf("copy %d: %q, want MD5 %s and a SUCCESS verdict made by reading", i+1, c, sum)
		}
		if audited := strings.Contains(c, "ADD_CONTENT") && strings.Contains(c, "ingest@example.org"); audited != (i < 2) {
			t.Errorf("copy %d: %q: its audit event shown %v, want %v", i+1, c, audited, i < 2)
		}
	}
	// The item's evidence events, each proof downloadable.
	var proofs []int
	b.run(viewer, eval(`Promise.all([...document.querySelectorAll("#evidence-events a[download]")].map(a => fetch(a.href).then(r => r.status)))`, &proofs))
	if len(proofs) != 2 || proofs[0] != 200 || proofs[1] != 200 {
		t.Errorf("the item's evidence proofs: %v, want two downloads", proofs)
	}
	var restoreControls int
	b.run(viewer, eval(`document.querySelectorAll("button.restore, form[action='/item/restore']").length`, &restoreControls))
	if restoreControls != 0 {
		t.Errorf("the viewer sees %d restore controls", restoreControls)
	}
	var forged int
	b.run(viewer, eval(fmt.Sprintf(`fetch("/item/restore", {method: "POST", body: new URLSearchParams({account: "acme", store: "3", space: "photos", id: %q, version: "x"})}).then(r => r.status)`, itemID), &forged))
	if forged != 403 {
		t.Errorf("the viewer's forged restore: %d, want 403", forged)
	}

	// --- Hostile names render inert: nothing they hold runs.
	b.run(viewer, chromedp.Navigate(b.url+"/items?account=acme&space=photos&prefix=2026%2F"), chromedp.WaitVisible("#items", chromedp.ByQuery))
	var pwned bool
	var rows int
	b.run(viewer, eval(`window.pwned === 1`, &pwned), eval(`document.querySelectorAll("#items tbody tr").length`, &rows))
	if pwned || rows != 3+len(hostile) {
		t.Errorf("hostile names: pwned %v, %d rows (want %d)", pwned, rows, 3+len(hostile))
	}
	b.checkPage(viewer, axe, "items (hostile names)")
	if st := b.navigate(viewer, chromedp.Navigate(b.url+"/item?"+url.Values{"account": {"acme"}, "space": {"photos"}, "id": {hostile[0]}}.Encode())); st != 200 {
		t.Errorf("the hostile item's page: %d", st)
	}
	b.run(viewer, eval(`window.pwned === 1`, &pwned))
	if pwned {
		t.Error("a hostile content ID ran on its item page")
	}

	// --- The admin restores store 3's copy from its page.
	admin := b.tab()
	b.login(admin, b.admin)
	itemURL := b.url + "/item?" + url.Values{"account": {"acme"}, "space": {"photos"}, "id": {itemID}}.Encode()
	b.run(admin, chromedp.Navigate(itemURL), chromedp.WaitVisible("#versions-3 button.restore", chromedp.ByQuery))
	b.shot(admin, "item")
	if st := b.navigate(admin, chromedp.Click("#versions-3 button.restore", chromedp.ByQuery)); st != 200 {
		t.Fatalf("restore: %d", st)
	}
	var notice string
	b.run(admin, chromedp.Text("#notice", &notice, chromedp.ByQuery))
	if !strings.Contains(notice, "Restored") {
		t.Errorf("after the restore: %q", notice)
	}
	if info, err := p3.Head(ctx, "photos", itemID); err != nil || info.Size != int64(len(itemBody)) {
		t.Errorf("store 3 after the restore: %+v, %v", info, err)
	}
	var changes string
	b.run(admin, chromedp.Navigate(b.url+"/changes"), chromedp.Text("#changes", &changes, chromedp.ByQuery))
	if !strings.Contains(changes, "item.restore") || !strings.Contains(changes, "acme/3/photos/"+itemID) {
		t.Errorf("the change log page: %q", changes)
	}

	// --- Statistics: the page's table is millctl stats's.
	b.run(admin, chromedp.Navigate(b.url+"/statistics?by=store"), chromedp.WaitVisible("#stats", chromedp.ByQuery))
	b.shot(admin, "statistics")
	var page []string
	b.run(admin, eval(`[...document.querySelectorAll("#stats tbody tr")].map(tr => [...tr.cells].slice(0, 5).map(c => c.textContent.trim()).join(" "))`, &page))
	bin := testbin.Build(t, "millctl")["millctl"]
	cmd := testbin.Run(t, time.Minute, testbin.Spec{Path: bin, Args: []string{"stats", "--by", "store", "--database-url", b.pool.Config().ConnString()}, Env: testbin.Env()})
	if err := cmd.Err(); err != nil {
		t.Fatalf("millctl stats: %v\n%s", err, cmd.Output())
	}
	var cli []string
	for _, line := range strings.Split(strings.TrimSpace(cmd.Output()), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 5 && f[0] != "total:" {
			cli = append(cli, strings.Join(f[:5], " "))
		}
	}
	if len(cli) == 0 || strings.Join(page, "\n") != strings.Join(cli, "\n") {
		t.Errorf("the statistics page:\n%s\nmillctl stats --by store:\n%s", strings.Join(page, "\n"), cmd.Output())
	}

	// --- Every page: axe-core, and 390 px.
	for _, pg := range []struct{ path, wait, name string }{
		{"/", "#figures", "home"},
		{"/runs/bitproducer/20260501T030000Z", "#run-counts", "producer-run"},
		{"/items?account=acme&space=photos&prefix=2026%2Fimg", "#items", "items"},
		{strings.TrimPrefix(itemURL, b.url), "#copies", "item"},
		{"/item/audit?" + url.Values{"account": {"acme"}, "space": {"photos"}, "id": {itemID}, "store": {"1"}}.Encode(), "#audit-1", "item-audit"},
		{"/statistics", "#stats", "statistics"},
		{"/policies", "#accounts", "policies"},
		{"/policies/acme", "#account", "policy"},
		{"/policies/acme/edit", "#add-space", "editor"},
		{"/policies/acme/history", "#versions", "history"},
		{"/queues", "#queue-table", "queues"},
		{"/dead-letters", "#dl-table", "dead-letters"},
		{"/bit", "#runs", "bit-runs"},
		{"/bit/space?run=" + b.bitRun + "&account=acme&store=1&space=photos", "#cases", "bit-space"},
		{"/bit/results?result=FAILURE", "#results", "bit-results"},
		{"/fleet", "#workers", "fleet"},
		{"/changes", "#changes", "changes"},
	} {
		if st := b.navigate(admin, chromedp.Navigate(b.url+pg.path)); st != 200 {
			t.Errorf("%s: status %d", pg.path, st)
			continue
		}
		b.run(admin, chromedp.WaitVisible(pg.wait, chromedp.ByQuery))
		b.checkPage(admin, axe, pg.name)
	}
	signedOut := b.tab()
	b.run(signedOut, chromedp.Navigate(b.url+"/login"), chromedp.WaitVisible("#token", chromedp.ByQuery))
	b.checkPage(signedOut, axe, "login")
}
