package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/runs/memruns"
)

// TestHomeShowsRunsInProgress: a run in progress is on the home page with
// its progress bar (done of queued, in words too), what is left and its
// ETA, and links to its page, which lists its counts and its failures
// (dead-lettered first); a completed run is not on the home page; hostile
// text renders inert; a forged run name is 404.
func TestHomeShowsRunsInProgress(t *testing.T) {
	var store *memruns.Store
	e := newEnv(t, func(c *console.Config) {
		store = memruns.New(c.Clock)
		c.Runs = store
	})
	ctx := context.Background()
	start := e.clock.Now()
	hostile := `<script>alert(1)</script>` + "\u202e"
	for _, r := range []runs.Run{
		{Producer: runs.ProducerBit, ID: "20260501T110000Z", Scope: "2 accounts " + hostile, Started: start.Add(-time.Hour)},
		{Producer: runs.ProducerDup, ID: "20260501T100000Z", Scope: "done already", Started: start.Add(-2 * time.Hour)},
	} {
		if err := store.Start(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.Listed(ctx, runs.ProducerBit, "20260501T110000Z", 10, start.Add(-50*time.Minute)); err != nil {
		t.Fatal(err)
	}
	record := func(producer, id string, i int, st runs.State, at time.Time) {
		t.Helper()
		o := runs.Outcome{Producer: producer, RunID: id, Key: fmt.Sprintf("k%d", i), State: st, Type: "BIT",
			Item: "acme/1/photos/" + hostile, Error: "boom " + hostile, Attempts: 3, At: at}
		if _, err := store.Record(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// Four of ten settled over 40 minutes: 6 left at 0.1/min → 60 min.
	for i := range 3 {
		record(runs.ProducerBit, "20260501T110000Z", i, runs.StateDone, start.Add(-40*time.Minute+time.Duration(i)*time.Minute))
	}
	record(runs.ProducerBit, "20260501T110000Z", 3, runs.StateDead, start)
	record(runs.ProducerBit, "20260501T110000Z", 4, runs.StateFailed, start)
	if err := store.Listed(ctx, runs.ProducerDup, "20260501T100000Z", 1, start.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	record(runs.ProducerDup, "20260501T100000Z", 9, runs.StateDone, start.Add(-time.Hour))
	if ok, err := store.Complete(ctx, runs.ProducerDup, "20260501T100000Z", "", start); err != nil || !ok {
		t.Fatalf("complete: %v %v", ok, err)
	}

	resp, body := e.do(e.viewer, "GET", "/", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("home: %d", resp.StatusCode)
	}
	section := body[strings.Index(body, `id="runs-in-progress"`):]
	section = section[:strings.Index(section, "</table>")]
	for _, want := range []string{
		`<a href="/runs/bitproducer/20260501T110000Z">20260501T110000Z</a>`,
		`<progress max="100" value="40"`, "4 of 10 (40%)",
		`<td class="num">3</td><td class="num">6</td><td>1 h</td>`,
		"&lt;script&gt;alert(1)&lt;/script&gt;",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("home's runs lack %q:\n%s", want, section)
		}
	}
	if strings.Contains(section, "dupproducer") || strings.Contains(body, "<script>alert") {
		t.Errorf("home shows a completed run or hostile markup:\n%s", section)
	}

	resp, body = e.do(e.viewer, "GET", "/runs/bitproducer/20260501T110000Z", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("run page: %d", resp.StatusCode)
	}
	for _, want := range []string{"<dt>Done</dt><dd>3</dd>", "<dt>Failed, retrying</dt><dd>1</dd>", "<dt>Dead-lettered</dt><dd>1</dd>",
		"<dt>Left</dt><dd>6</dd>", "<dt>ETA</dt><dd>1 h</dd>", "<dt>Rate</dt><dd>6.0 tasks/h</dd>", "boom &lt;script&gt;"} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q", want)
		}
	}
	fails := body[strings.Index(body, `id="run-failures"`):]
	if d, f := strings.Index(fails, "<td>dead</td>"), strings.Index(fails, "<td>failed</td>"); d < 0 || f < 0 || d > f {
		t.Errorf("failures not listed dead first (dead at %d, failed at %d)", d, f)
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("run page renders hostile markup")
	}
	for _, p := range []string{"/runs/bitproducer/20990101T000000Z", "/runs/evil/20260501T110000Z", "/runs/bitproducer/%3Cscript%3E"} {
		if resp, _ := e.do(e.viewer, "GET", p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", p, resp.StatusCode)
		}
	}
}

// TestHomeWithoutRuns: without a record of runs the home page says so.
func TestHomeWithoutRuns(t *testing.T) {
	e := newEnv(t)
	if _, body := e.do(e.viewer, "GET", "/", nil); !strings.Contains(body, "reads no record of producer runs") {
		t.Error("home page does not say it reads no runs")
	}
	if resp, _ := e.do(e.viewer, "GET", "/runs/bitproducer/20260501T110000Z", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("run page without runs: %d", resp.StatusCode)
	}
}
