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

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/task"
)

// auditRows returns the rows of the audit-history table id in body: each
// row's time and user cells.
func auditRows(t *testing.T, body, id string) []string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("no table %s", id)
	}
	tbl, _, _ := strings.Cut(body[i:], "</table>")
	var out []string
	for _, m := range regexp.MustCompile(`<tr><td>([^<]*)</td><td>[^<]*</td><td><bdi>([^<]*)</bdi>`).FindAllStringSubmatch(tbl, -1) {
		out = append(out, m[1]+" "+html.UnescapeString(m[2]))
	}
	return out
}

// TestItemAuditHistory: the item page shows each copy's newest 10 audit
// events, newest first, and links to the older ones, which the history
// page lists a page at a time; names are escaped; a forged page token, a
// token of another item and a store outside the registry are refused.
func TestItemAuditHistory(t *testing.T) {
	log := memauditlog.New()
	e := newItemsEnv(t, func(c *console.Config) { c.Audit = log })
	ctx := context.Background()
	t0 := time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	hostile := `<script>alert(1)</script>` + "\u202e"
	var want []string // newest first
	for i := range 65 {
		user := fmt.Sprintf("user%02d", i)
		if i == 64 {
			user = hostile
		}
		at := t0.Add(time.Duration(i) * time.Hour)
		if _, err := log.Put(ctx, auditlog.Entry{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: itemID,
			Action: task.ActionSetContentProperties, UserID: user, Time: at}); err != nil {
			t.Fatal(err)
		}
		want = append([]string{at.Format("2006-01-02 15:04:05 UTC") + " " + user}, want...)
	}
	// Another item's entry (the content ID a prefix of this one).
	if _, err := log.Put(ctx, auditlog.Entry{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "2026/img-004",
		Action: task.ActionAddContent, UserID: "other", Time: t0.Add(1000 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	item := "/item?account=acme&space=photos&id=" + url.QueryEscape(itemID)
	resp, body := e.do(e.viewer, "GET", item, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("item: %d", resp.StatusCode)
	}
	if got := auditRows(t, body, "audit-1"); strings.Join(got, "\n") != strings.Join(want[:10], "\n") {
		t.Errorf("the item page's history of store 1:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want[:10], "\n"))
	}
	if got := auditRows(t, body, "audit-2"); len(got) != 0 || !strings.Contains(body, "No audit event.") {
		t.Errorf("store 2 has no event, the page shows %q", got)
	}
	if strings.Contains(body, "<script>alert") || !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("a hostile user name is not escaped")
	}
	// The older entries: pages of 50 after the item page's 10.
	var got []string
	older := regexp.MustCompile(`<a href="([^"]*)" class="older">`)
	m := older.FindStringSubmatch(body[strings.Index(body, `id="audit-1"`):])
	var firstToken string
	for pages := 0; m != nil; pages++ {
		if pages > 3 {
			t.Fatal("the history pages do not end")
		}
		link := html.UnescapeString(m[1])
		if firstToken == "" {
			u, _ := url.Parse(link)
			firstToken = u.Query().Get("after")
		}
		resp, body = e.do(e.viewer, "GET", link, nil)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", link, resp.StatusCode)
		}
		rows := auditRows(t, body, "audit-1")
		if len(rows) > 50 {
			t.Fatalf("a history page of %d rows", len(rows))
		}
		got = append(got, rows...)
		m = older.FindStringSubmatch(body)
	}
	if strings.Join(got, "\n") != strings.Join(want[10:], "\n") {
		t.Errorf("the older pages:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want[10:], "\n"))
	}
	// Hostile paging: a forged token, another item's token, a store the
	// account does not have, an over-long token.
	for _, c := range []struct {
		q    url.Values
		want int
	}{
		{url.Values{"store": {"1"}, "id": {itemID}, "after": {"forged"}}, 400},
		{url.Values{"store": {"1"}, "id": {"2026/img-004"}, "after": {firstToken}}, 400},
		{url.Values{"store": {"9"}, "id": {itemID}}, 404},
		{url.Values{"store": {"1"}, "id": {itemID}, "after": {strings.Repeat("a", 5000)}}, 400},
		{url.Values{"id": {itemID}}, 400},
	} {
		c.q.Set("account", "acme")
		c.q.Set("space", "photos")
		resp, body := e.do(e.viewer, "GET", "/item/audit?"+c.q.Encode(), nil)
		if resp.StatusCode != c.want || strings.Contains(body, "<bdi>other</bdi>") {
			t.Errorf("%v: %d, want %d and no entry", c.q, resp.StatusCode, c.want)
		}
	}
}

// TestItemWithoutAuditLog: without an audit log the item page says so and
// the history page is a 404.
func TestItemWithoutAuditLog(t *testing.T) {
	e := newItemsEnv(t)
	if _, body := e.do(e.viewer, "GET", "/item?account=acme&space=photos&id="+url.QueryEscape(itemID), nil); !strings.Contains(body, "reads no audit log") {
		t.Error("the item page does not say it reads no audit log")
	}
	if resp, _ := e.do(e.viewer, "GET", "/item/audit?account=acme&space=photos&store=1&id="+url.QueryEscape(itemID), nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("history without an audit log: %d", resp.StatusCode)
	}
}
