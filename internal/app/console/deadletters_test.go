package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// seedDeadLetters puts 70 DUP dead letters from dup-high and 50 BIT from
// bit (each a minute apart, the newest last), one message in no
// dead-letter form and one with a body over 4 KiB on the dead-letter
// queue.
func seedDeadLetters(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	var es []queue.SendEntry
	add := func(typ task.Type, src string, i int, props map[string]string) {
		body, err := task.Encode(task.New(typ, props), task.FormatJSON)
		if err != nil {
			t.Fatal(err)
		}
		en, err := deadletter.Encode(&deadletter.Letter{Body: body, Reason: deadletter.ReasonFailed, Error: fmt.Sprintf("%s: failure number %d", typ, i),
			TaskType: typ, SourceQueue: "mill-" + src, Attempts: 3, Worker: "w1", Time: base.Add(time.Duration(i) * time.Minute), MessageID: fmt.Sprintf("src-%s-%d", typ, i)})
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, en)
	}
	for i := range 120 {
		if i%12 < 7 {
			add(task.TypeDup, queue.KeyDupHigh, i, map[string]string{"n": fmt.Sprint(i)})
		} else {
			add(task.TypeBit, queue.KeyBit, i, map[string]string{"n": fmt.Sprint(i)})
		}
	}
	add(task.TypeNoop, queue.KeyDupLow, 200, map[string]string{"pad": strings.Repeat("p", 6000)})
	es = append(es, queue.SendEntry{Body: []byte("type=NOOP\nid=plain\n")})
	if err := e.queues[queue.KeyDeadLetter].Send(ctx, es...); err != nil {
		t.Fatal(err)
	}
}

func (e *env) idle() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.console.IdleForTest(ctx); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) changeLog() string {
	e.t.Helper()
	cs, _, err := e.changes.List(context.Background(), "", 50)
	if err != nil {
		e.t.Fatal(err)
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s %s %s: %s\n", c.User, c.Role, c.Action, c.Summary)
	}
	return b.String()
}

var rowRE = regexp.MustCompile(`<tr id="dl-([^"]+)"`)

// TestDeadLetterPages: the list pages through the console's scan, newest
// first, filtered; a link to a later page says when the list was rescanned
// since; one dead letter shows its provenance, task and body (a long body
// whole on demand); a viewer has no controls and gets 403 for every
// action.
func TestDeadLetterPages(t *testing.T) {
	e := newEnv(t)
	seedDeadLetters(t, e)
	if resp, _ := e.do(e.viewer, "GET", "/dead-letters", nil); resp.StatusCode != 200 {
		t.Fatalf("GET /dead-letters: %d", resp.StatusCode)
	}
	e.idle()
	_, body := e.do(e.viewer, "GET", "/dead-letters", nil)
	rows := rowRE.FindAllStringSubmatch(body, -1)
	if len(rows) != 50 || !strings.Contains(body, `<strong id="dl-matching">122</strong>`) || !strings.Contains(body, "Page 1 of 3") {
		t.Fatalf("first page: %d rows\n%s", len(rows), body)
	}
	if !strings.Contains(body, `id="dl-looked">122<`) || !strings.Contains(body, "SQS cannot list a queue") {
		t.Errorf("the page does not say what it shows")
	}
	for _, c := range []string{`id="redrive"`, `id="purge"`} {
		if strings.Contains(body, c) {
			t.Errorf("the viewer sees %s", c)
		}
	}
	// Newest first: the message in no dead-letter form (its time is when
	// it was sent, the clock's now), the NOOP of 03:20, then failure 119.
	for i, want := range []string{"not from Mill", "src-NOOP-200", "src-BIT-119"} {
		if _, one := e.do(e.viewer, "GET", "/dead-letters/"+rows[i][1], nil); !strings.Contains(one, want) {
			t.Errorf("row %d is not %s", i, want)
		}
	}
	m := regexp.MustCompile(`href="(/dead-letters\?[^"]*page=2[^"]*)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no link to page 2")
	}
	next := htmlUnescape(m[1])
	_, p2 := e.do(e.viewer, "GET", next, nil)
	if r2 := rowRE.FindAllStringSubmatch(p2, -1); len(r2) != 50 || r2[0][1] == rows[0][1] || strings.Contains(p2, `id="dl-stale"`) {
		t.Fatalf("page 2: %d rows", len(r2))
	}
	// Filters.
	_, bits := e.do(e.viewer, "GET", "/dead-letters?type=BIT&error=failure+number+11", nil)
	if !strings.Contains(bits, `<strong id="dl-matching">6</strong>`) { // 11 and 115 to 119
		t.Errorf("BIT with error 11: %s", regexp.MustCompile(`dl-matching">\d+`).FindString(bits))
	}
	_, dup := e.do(e.viewer, "GET", "/dead-letters?source=dup-high", nil)
	if !strings.Contains(dup, `<strong id="dl-matching">70</strong>`) {
		t.Errorf("source dup-high: %s", regexp.MustCompile(`dl-matching">\d+`).FindString(dup))
	}
	// A rescan: the old page 2 link says the list changed.
	if resp, _ := e.do(e.viewer, "POST", "/dead-letters/rescan", url.Values{}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("rescan: %d", resp.StatusCode)
	}
	e.idle()
	if _, p2 = e.do(e.viewer, "GET", next, nil); !strings.Contains(p2, `id="dl-stale"`) {
		t.Error("page 2 of an earlier scan does not say the list was rescanned")
	}
	// Page 1 is the newest whatever the scan (the page refreshing itself
	// while a rescan runs asks for it with the earlier scan's number).
	if _, p1 := e.do(e.viewer, "GET", strings.Replace(next, "page=2", "page=1", 1), nil); strings.Contains(p1, `id="dl-stale"`) {
		t.Error("page 1 says the list was rescanned")
	}

	// One dead letter; the long one whole on demand.
	_, one := e.do(e.viewer, "GET", "/dead-letters/src-DUP-0", nil)
	for _, want := range []string{"source queue", "mill-dup-high", "src-DUP-0", "DUP: failure number 0", "type: DUP", "n=0"} {
		if !strings.Contains(one, want) {
			t.Errorf("one dead letter: no %q", want)
		}
	}
	_, long := e.do(e.viewer, "GET", "/dead-letters/src-NOOP-200", nil)
	if !strings.Contains(long, `id="whole"`) || strings.Contains(long, strings.Repeat("p", 5000)) {
		t.Errorf("a long body is not cut with a link to the whole")
	}
	_, whole := e.do(e.viewer, "GET", "/dead-letters/src-NOOP-200?whole=1", nil)
	if !strings.Contains(whole, strings.Repeat("p", 6000)) || !strings.Contains(whole, "pad=") {
		t.Errorf("the whole message was not read")
	}
	if resp, _ := e.do(e.viewer, "GET", "/dead-letters/nope", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a missing dead letter: %d", resp.StatusCode)
	}
	// The viewer's actions are refused.
	for _, c := range []struct{ method, path string }{
		{"GET", "/dead-letters/redrive"}, {"POST", "/dead-letters/redrive"}, {"GET", "/dead-letters/purge"}, {"POST", "/dead-letters/purge"},
	} {
		var form url.Values
		if c.method == "POST" {
			form = url.Values{"confirm": {"purge"}, "expected": {"200"}}
		}
		if resp, _ := e.do(e.viewer, c.method, c.path, form); resp.StatusCode != http.StatusForbidden {
			t.Errorf("viewer %s %s: %d, want 403", c.method, c.path, resp.StatusCode)
		}
	}
	e.idle()
	if d, _ := e.queues[queue.KeyDeadLetter].Depth(context.Background()); d.Total() != 122 || d.Visible != 122 {
		t.Errorf("after the viewer: %+v", d)
	}
}

// TestRedriveAndPurgeFromTheConsole: a dry run says what would go where; a
// redrive sends the matches back with attempts reset and logs the change
// with the user; a filtered purge that finds more than was confirmed
// deletes nothing; purges of a filter and of the whole queue.
// dlPost is the form a redrive or purge page posts: the four filter
// fields (empty unless set), and the others set.
func dlPost(kv ...string) url.Values {
	v := url.Values{"type": {""}, "source": {""}, "error": {""}, "id": {""}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func TestRedriveAndPurgeFromTheConsole(t *testing.T) {
	e := newEnv(t)
	seedDeadLetters(t, e)
	ctx := context.Background()
	e.do(e.operator, "GET", "/dead-letters", nil)
	e.idle()
	_, dry := e.do(e.operator, "GET", "/dead-letters/redrive?type=DUP", nil)
	if !strings.Contains(dry, `<strong id="would">70</strong>`) || !strings.Contains(dry, "70 to <code>mill-dup-high</code>") {
		t.Fatalf("dry run:\n%s", dry)
	}
	if resp, body := e.do(e.operator, "GET", "/dead-letters/redrive?type=DUP&rate=-1", nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "rate") {
		t.Errorf("a negative rate: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.operator, "POST", "/dead-letters/redrive", dlPost("type", "DUP", "to", "elsewhere", "rate", "0")); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("a target that is not a work queue: %d", resp.StatusCode)
	}
	resp, _ := e.do(e.operator, "POST", "/dead-letters/redrive", dlPost("type", "DUP", "rate", "0", "to", ""))
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("redrive: %d", resp.StatusCode)
	}
	e.idle()
	if n := e.queues[queue.KeyDupHigh].Len(); n != 70 {
		t.Fatalf("dup-high holds %d after the redrive, want 70", n)
	}
	for _, m := range e.queues[queue.KeyDupHigh].Messages() {
		if tk, err := task.Decode(m.Body); err != nil || tk.Attempts != 0 || tk.Type != task.TypeDup {
			t.Fatalf("redriven %q: %v", m.Body, err)
		}
	}
	_, list := e.do(e.operator, "GET", "/dead-letters", nil)
	if !strings.Contains(list, `<strong id="dl-matching">52</strong>`) || !strings.Contains(list, "70 redriven, 0 failed") {
		t.Errorf("after the redrive the page shows %s", regexp.MustCompile(`dl-matching">\d+`).FindString(list))
	}
	log := e.changeLog()
	if !strings.Contains(log, "oli operator dlq.redrive: redrive started: type \"DUP\"") || !strings.Contains(log, "oli operator dlq.redrive.result: 70 redriven") {
		t.Errorf("change log:\n%s", log)
	}

	// Purge: confirmation required; more matching than confirmed deletes
	// nothing.
	if resp, body := e.do(e.operator, "POST", "/dead-letters/purge", dlPost("type", "BIT", "expected", "50", "confirm", "")); resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(body, "Type purge") {
		t.Errorf("purge without confirmation: %d", resp.StatusCode)
	}
	_, conf := e.do(e.operator, "GET", "/dead-letters/purge?type=BIT", nil)
	if !strings.Contains(conf, `<strong id="purge-n">50</strong>`) {
		t.Fatalf("purge confirmation:\n%s", conf)
	}
	e.do(e.operator, "POST", "/dead-letters/purge", dlPost("type", "BIT", "expected", "10", "confirm", "purge"))
	e.idle()
	if d, _ := e.queues[queue.KeyDeadLetter].Depth(ctx); d.Total() != 52 {
		t.Fatalf("a purge of more than confirmed deleted: %+v", d)
	}
	e.do(e.operator, "POST", "/dead-letters/purge", dlPost("type", "BIT", "expected", "50", "confirm", "purge"))
	e.idle()
	if d, _ := e.queues[queue.KeyDeadLetter].Depth(ctx); d.Total() != 2 {
		t.Fatalf("after purging BIT: %+v", d)
	}
	_, all := e.do(e.operator, "GET", "/dead-letters/purge", nil)
	if !strings.Contains(all, "Purge the whole dead-letter queue?") || !strings.Contains(all, `<strong id="purge-n">2</strong>`) {
		t.Fatalf("purge all confirmation:\n%s", all)
	}
	e.do(e.operator, "POST", "/dead-letters/purge", dlPost("expected", "2", "confirm", "purge"))
	e.idle()
	if n := e.queues[queue.KeyDeadLetter].Len(); n != 0 {
		t.Fatalf("%d left after purging all", n)
	}
	log = e.changeLog()
	for _, want := range []string{"dlq.purge.result: nothing deleted: more dead letters match now than the 10 confirmed", "dlq.purge.result: 50 deleted, 0 failed",
		"dlq.purge: purge started: the whole queue", "dlq.purge.result: mill-dead-letter purged"} {
		if !strings.Contains(log, want) {
			t.Errorf("change log has no %q:\n%s", want, log)
		}
	}
}

// TestFleetPage: workers with their states (a lost one marked), totals,
// the gone ones counted; an operator pauses and resumes (recorded in the
// change log); a viewer cannot.
func TestFleetPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	now := e.clock.Now()
	for _, w := range []fleet.Worker{
		{ID: "w-run", State: fleet.StateRunning, Heartbeat: now, Identity: process.Identity{Started: now.Add(-time.Hour)}, Queues: []string{"mill-dup-high", "mill-bit"}, Pool: 8, Held: 3,
			Running: map[string]int{"DUP": 2}, Counts: map[string]fleet.Counts{"DUP": {Processed: 41, Failed: 2}, "BIT": {Processed: 1}}},
		{ID: "w-lost", State: fleet.StateRunning, Heartbeat: now.Add(-10 * time.Minute)},
		{ID: "w-gone", State: fleet.StateGone, Heartbeat: now.Add(-time.Minute)},
	} {
		w.Interval, w.Expires = 30*time.Second, now.Add(time.Hour)
		if err := e.fleet.Put(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	_, body := e.do(e.viewer, "GET", "/fleet", nil)
	for _, want := range []string{`id="w-w-run"`, `<tr id="w-w-lost" class="lost">`, "1 running", "1 lost", "1 gone", `class="num processed">42<`, "DUP 2", "dup-high, bit", "1 worker shut down cleanly"} {
		if !strings.Contains(body, want) {
			t.Errorf("fleet page: no %q", want)
		}
	}
	if strings.Contains(body, `id="w-w-gone"`) || strings.Contains(body, `id="pause"`) {
		t.Error("the viewer sees a gone worker or the pause form")
	}
	if resp, _ := e.do(e.viewer, "POST", "/fleet/pause", url.Values{"target": {"type:DUP"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer pause: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.operator, "POST", "/fleet/pause", url.Values{"target": {"queue:mill-dead-letter"}, "reason": {""}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("pausing the dead-letter queue: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.operator, "POST", "/fleet/pause", url.Values{"target": {"type:DUP"}, "reason": {"storage maintenance"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause: %d", resp.StatusCode)
	}
	ps, _ := e.fleet.Pauses(ctx)
	if len(ps) != 1 || ps[0].Key() != "type:DUP" || ps[0].By != "oli" || ps[0].Reason != "storage maintenance" {
		t.Fatalf("pauses %+v", ps)
	}
	_, queues := e.do(e.viewer, "GET", "/queues", nil)
	if !regexp.MustCompile(`(?s)id="q-dup-high">.{0,200}paused \(type DUP\)`).MatchString(queues) {
		t.Error("the queues page does not mark dup-high paused by the DUP pause")
	}
	_, body = e.do(e.operator, "GET", "/fleet", nil)
	if !strings.Contains(body, `id="resume-type-DUP"`) || strings.Contains(body, `<option value="type:DUP">`) {
		t.Error("the paused type has no resume button, or is offered again")
	}
	if resp, _ := e.do(e.operator, "POST", "/fleet/resume", url.Values{"target": {"type:DUP"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("resume: %d", resp.StatusCode)
	}
	if ps, _ := e.fleet.Pauses(ctx); len(ps) != 0 {
		t.Fatalf("after resume: %+v", ps)
	}
	log := e.changeLog()
	if !strings.Contains(log, "oli operator fleet.pause: paused type DUP (by oli") || !strings.Contains(log, "oli operator fleet.resume: resumed type DUP") {
		t.Errorf("change log:\n%s", log)
	}
}
