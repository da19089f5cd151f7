package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/evidence"
)

// TestItemEvidence: with an evidence log, the item page lists the item's
// events (as object or as a replication's source; not a neighbour's),
// newest first, with type, outcome, time and agent, each with a link that
// downloads its inclusion proof, which evidence.CheckProof accepts with
// the log's verifier key; hostile agent names are escaped; a forged or
// unknown event ID is refused; a log that does not verify is said so.
func TestItemEvidence(t *testing.T) {
	ctx := context.Background()
	log, blobs, v := newEvidenceLog(t)
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	hostile := `<script>alert(1)</script>` + "\u202e"
	obj := func(store, id string) evidence.Copy {
		return evidence.Copy{Account: "acme", Store: store, Space: "photos", ContentID: id}
	}
	fix := func(i int, store, id, agent string) *evidence.Event {
		return &evidence.Event{V: evidence.FormatVersion, ID: evidence.EventID("bit", store, id, fmt.Sprint(i)), Type: evidence.FixityCheck,
			Time: evidence.FormatTime(t0.Add(time.Duration(i) * time.Hour)), Object: obj(store, id),
			Fixity:  &evidence.Fixity{Algorithm: evidence.MD5, Digest: fmt.Sprintf("%032x", i), Expected: fmt.Sprintf("%032x", i), Method: evidence.MethodRead},
			Outcome: evidence.Success, Agent: evidence.Agent{Kind: evidence.Software, Name: agent, Instance: "i-0abc"}}
	}
	rep := &evidence.Event{V: evidence.FormatVersion, ID: evidence.EventID("dup", "1"), Type: evidence.Replication,
		Time: evidence.FormatTime(t0.Add(3 * time.Hour)), Object: obj("2", itemID), Source: ptr(obj("1", itemID)),
		Outcome: evidence.Success, Agent: evidence.Agent{Kind: evidence.Software, Name: "workman"}}
	events := []*evidence.Event{fix(1, "1", itemID, "workman"), fix(2, "1", "2026/img-004", "workman"), rep, fix(4, "2", itemID, hostile)}
	if _, err := log.Append(ctx, events); err != nil {
		t.Fatal(err)
	}
	e := newItemsEnv(t, func(c *console.Config) { c.Evidence = &console.EvidenceLog{Blobs: blobs, Verifier: v} })
	item := "/item?account=acme&space=photos&id=" + url.QueryEscape(itemID)
	resp, body := e.do(e.viewer, "GET", item, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("item: %d", resp.StatusCode)
	}
	tbl, _, _ := strings.Cut(body[strings.Index(body, `id="evidence-events"`):], "</table>")
	rows := regexp.MustCompile(`<tr><td>([^<]*)</td><td>([^<]*)</td>.*?<td>([^<]*)</td><td><bdi>([^<]*)</bdi>.*?<a href="([^"]*)" download>`).FindAllStringSubmatch(tbl, -1)
	var got []string
	for _, m := range rows {
		got = append(got, m[1]+" | "+m[2]+" | "+m[3]+" | "+html.UnescapeString(m[4]))
	}
	want := []string{
		"2026-04-01T04:00:00Z | fixity check | success | " + hostile,
		"2026-04-01T03:00:00Z | replication | success | workman",
		"2026-04-01T01:00:00Z | fixity check | success | workman",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the item's events:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), tbl)
	}
	if strings.Contains(body, "<script>alert") {
		t.Error("a hostile agent name is not escaped")
	}
	// Each proof downloads and checks with the verifier key alone.
	for i, m := range rows {
		resp, proof := e.do(e.viewer, "GET", html.UnescapeString(m[5]), nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment; ") {
			t.Fatalf("proof %d: %d %v", i, resp.StatusCode, resp.Header)
		}
		ev, _, err := evidence.CheckProof([]byte(proof), v)
		if err != nil {
			t.Fatalf("proof %d does not check: %v", i, err)
		}
		if ev.Time != strings.Fields(want[i])[0] {
			t.Errorf("proof %d is of event at %s, want %s", i, ev.Time, strings.Fields(want[i])[0])
		}
	}
	for _, c := range []struct {
		id   string
		want int
	}{{"", 400}, {"../../etc/passwd", 400}, {strings.Repeat("a", 129), 400}, {evidence.EventID("none"), 404}} {
		if resp, _ := e.do(e.viewer, "GET", "/item/evidence/proof?event="+url.QueryEscape(c.id), nil); resp.StatusCode != c.want {
			t.Errorf("proof of %q: %d, want %d", c.id, resp.StatusCode, c.want)
		}
	}
	// A log signed by another key does not verify: said, nothing listed.
	_, otherKey, _ := evidence.GenerateKey("mill.test/other")
	other, _ := evidence.NewVerifier(otherKey)
	e2 := newItemsEnv(t, func(c *console.Config) { c.Evidence = &console.EvidenceLog{Blobs: blobs, Verifier: other} })
	if _, body := e2.do(e2.viewer, "GET", item, nil); !strings.Contains(body, "does not verify") || strings.Contains(body, `id="evidence-events"`) {
		t.Error("a log that does not verify is not said so")
	}
	if resp, _ := e2.do(e2.viewer, "GET", html.UnescapeString(rows[0][5]), nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a proof from a log that does not verify: %d", resp.StatusCode)
	}
	// Without a log.
	e3 := newItemsEnv(t)
	if _, body := e3.do(e3.viewer, "GET", item, nil); !strings.Contains(body, "reads no evidence log") {
		t.Error("without a log the item page does not say so")
	}
}

func ptr[T any](v T) *T { return &v }

// evidenceLog returns a log in a directory with a fixity check and a
// replication of id (in acme's photos space).
func evidenceLog(t *testing.T, id string) *console.EvidenceLog {
	t.Helper()
	ctx := context.Background()
	l, blobs, v := newEvidenceLog(t)
	at := time.Now().UTC().Add(-time.Hour)
	src, dst := evidence.Copy{Account: "acme", Store: "1", Space: "photos", ContentID: id}, evidence.Copy{Account: "acme", Store: "2", Space: "photos", ContentID: id}
	if _, err := l.Append(ctx, []*evidence.Event{
		{V: evidence.FormatVersion, ID: evidence.EventID("dup", id), Type: evidence.Replication, Time: evidence.FormatTime(at),
			Object: dst, Source: &src, Outcome: evidence.Success, Agent: evidence.Agent{Kind: evidence.Software, Name: "workman"}},
		{V: evidence.FormatVersion, ID: evidence.EventID("bit", id), Type: evidence.FixityCheck, Time: evidence.FormatTime(at.Add(time.Minute)), Object: dst,
			Fixity:  &evidence.Fixity{Algorithm: evidence.MD5, Digest: strings.Repeat("0", 32), Expected: strings.Repeat("0", 32), Method: evidence.MethodRead},
			Outcome: evidence.Success, Agent: evidence.Agent{Kind: evidence.Software, Name: "workman", Instance: "i-0abc"}},
	}); err != nil {
		t.Fatal(err)
	}
	return &console.EvidenceLog{Blobs: blobs, Verifier: v}
}

// newEvidenceLog makes an empty evidence log in a directory, with a new
// key pair.
func newEvidenceLog(t *testing.T) (*evidence.Log, blob.Store, note.Verifier) {
	t.Helper()
	skey, vkey, err := evidence.GenerateKey("mill.test/console")
	if err != nil {
		t.Fatal(err)
	}
	v, err := evidence.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	blobs := dirblob.New(t.TempDir(), &blob.Options{MaxSize: evidence.MaxBlob})
	l, err := evidence.Open(context.Background(), blobs, skey, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return l, blobs, v
}
