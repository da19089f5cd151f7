package bitreport_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/notify/memnotify"
	"github.com/millfleet/mill/pkg/notify/notifytest"
	"github.com/millfleet/mill/pkg/notify/snsnotify"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors/bitreport"
)

// TestNotifiesProblems: a report with a failure and an error is announced
// (counts, location, the problem rows, attributes); a SUCCESS report is
// not.
func TestNotifiesProblems(t *testing.T) {
	e := setup(t, "a", "b", "c")
	e.index_(t, "a", "b", "c", "gone")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.record(t, "b", bitlog.ResultFailure, 2)
	e.record(t, "c", bitlog.ResultError, 4)
	var n memnotify.Notifier
	p := e.processor(t, func(c *bitreport.Config) { c.Notifier = &n })
	if err := p.Handle(t.Context(), e.report(t, 3, nil)); err != nil {
		t.Fatal(err)
	}
	evs := n.Events()
	if len(evs) != 1 {
		t.Fatalf("%d notifications, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Type != notify.EventBitReport || ev.Subject != "Mill: bit report FAILURE for acme/1/photos (1 failures, 1 errors)" {
		t.Errorf("event %q: %q", ev.Type, ev.Subject)
	}
	for _, want := range []string{"Result:   FAILURE", "Items:    3 reported: 1 SUCCESS, 1 FAILURE, 1 ERROR",
		"bit-integrity/acme/1/photos/" + run + ".tsv", `"b"  FAILURE  case 2`, `"c"  ERROR  case 4`,
		"millctl bitlog results --run " + run} {
		if !strings.Contains(ev.Body, want) {
			t.Errorf("body lacks %q:\n%s", want, ev.Body)
		}
	}
	if strings.Contains(ev.Body, `"a"`) {
		t.Errorf("body lists a healthy item:\n%s", ev.Body)
	}
	want := map[string]string{"event": "bit-report", "account": "acme", "store_id": "1", "space_id": "photos", "run_id": run, "result": "FAILURE"}
	if got := ev.Attrs(); len(got) != len(want) {
		t.Errorf("attributes %v, want %v", got, want)
	}
	for k, v := range want {
		if ev.Attrs()[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, ev.Attrs()[k], v)
		}
	}

	ok := setup(t, "a")
	ok.index_(t, "a")
	ok.record(t, "a", bitlog.ResultSuccess, 1)
	var quiet memnotify.Notifier
	if err := ok.processor(t, func(c *bitreport.Config) { c.Notifier = &quiet }).Handle(t.Context(), ok.report(t, 1, nil)); err != nil {
		t.Fatal(err)
	}
	if got := quiet.Events(); len(got) != 0 {
		t.Errorf("a SUCCESS report notified: %+v", got)
	}
}

// TestAdminCopy: with AdminSpace the report is also stored in the primary
// store's x-duracloud-admin space under the Java Mill's name, through the
// audited provider (CREATE_SPACE once, ADD_CONTENT per copy); a
// redelivered report replaces its copy.
func TestAdminCopy(t *testing.T) {
	e := setup(t, "a", "b")
	e.index_(t, "a", "b")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.record(t, "b", bitlog.ResultSuccess, 1)
	auditQ := memqueue.New("mill-audit", memqueue.Config{Clock: e.clk})
	p := e.processor(t, func(c *bitreport.Config) { c.AdminSpace, c.AuditQueue = true, auditQ })
	for range 2 {
		if err := p.Handle(t.Context(), e.report(t, 2, nil)); err != nil {
			t.Fatal(err)
		}
	}
	id := "bit-integrity/photos/1/bit-integrity_acme_1_photos_2026-05-01-03-00-00.tsv"
	if got := bitreport.AdminContentID(task.BitReport{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: run}, time.Now()); got != id {
		t.Fatalf("AdminContentID = %q, want %q", got, id)
	}
	rc, info, err := e.store.Get(t.Context(), bitreport.AdminSpaceID, id)
	if err != nil {
		t.Fatalf("the account's copy: %v", err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	want, err := os.ReadFile(filepath.Join(e.dir, "bit-integrity/acme/1/photos/"+run+".tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || info.MimeType != bitreport.AdminMimeType {
		t.Errorf("copy (%s) differs from the report:\n%s\nvs\n%s", info.MimeType, got, want)
	}
	sum, _, _ := storage.MD5Hex(bytes.NewReader(want))
	if info.Checksum != sum {
		t.Errorf("copy checksum %s, want %s", info.Checksum, sum)
	}
	msgs, err := auditQ.Receive(t.Context(), 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, m := range msgs {
		tk, err := task.Decode(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		a, err := task.AuditFrom(tk)
		if err != nil {
			t.Fatal(err)
		}
		if a.SpaceID != bitreport.AdminSpaceID || a.UserID != bitreport.AdminUserID {
			t.Errorf("audit %+v", a)
		}
		actions = append(actions, string(a.Action))
	}
	if strings.Join(actions, ",") != "CREATE_SPACE,ADD_CONTENT,ADD_CONTENT" {
		t.Errorf("audited %v, want the space once and the copy per report", actions)
	}
	// AdminSpace without an audit queue is refused.
	if _, err := bitreport.New(bitreport.Config{AdminSpace: true}); err == nil || !strings.Contains(err.Error(), "AuditQueue") {
		t.Errorf("New without AuditQueue: %v", err)
	}
}

// TestNotifiesThroughSNS: the report's notification reaches an SQS queue
// subscribed to an SNS topic on the emulator, with its attributes.
func TestNotifiesThroughSNS(t *testing.T) {
	cfg := testenv.AWS(t)
	topic := notifytest.New(t, cfg)
	n, err := snsnotify.New(topic.SNS, topic.ARN)
	if err != nil {
		t.Fatal(err)
	}
	e := setup(t, "a", "b")
	e.index_(t, "a", "b")
	e.record(t, "a", bitlog.ResultSuccess, 1)
	e.record(t, "b", bitlog.ResultFailure, 3)
	if err := e.processor(t, func(c *bitreport.Config) { c.Notifier = n }).Handle(t.Context(), e.report(t, 2, nil)); err != nil {
		t.Fatal(err)
	}
	got := topic.Receive(t, 1, 20*time.Second)
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1", len(got))
	}
	d := got[0]
	if d.Subject != "Mill: bit report FAILURE for acme/1/photos (1 failures, 0 errors)" || !strings.Contains(d.Message, `"b"  FAILURE  case 3`) {
		t.Errorf("delivered %q:\n%s", d.Subject, d.Message)
	}
	if d.Attributes["event"] != "bit-report" || d.Attributes["result"] != "FAILURE" || d.Attributes["run_id"] != run || d.Attributes["space_id"] != "photos" {
		t.Errorf("attributes %v", d.Attributes)
	}
}
