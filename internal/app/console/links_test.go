package console_test

import (
	"context"
	"encoding/base64"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/bitlog"
)

var hrefRE = regexp.MustCompile(`(?:href|action|hx-get|hx-post)="([^"]*)"`)

// links returns the URLs of a page's links and forms, as a browser reads
// them (HTML entities decoded).
func links(body string) []string {
	var out []string
	for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// link returns the page's link whose text (or id) matches, failing the
// test when there is none.
func link(t *testing.T, body, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(`<a [^>]*href="([^"]*)"[^>]*>` + pattern).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no link %s in:\n%s", pattern, body)
	}
	return html.UnescapeString(m[1])
}

// TestBitLinksFollowed follows the links the bit pages render — to a
// space, its filters, its report — for names holding characters a URL
// must escape: each answers 200 with the rows it names, the report
// downloads. The links were escaped twice (a filter showed every row, the
// download answered 400).
func TestBitLinksFollowed(t *testing.T) {
	e := newEnv(t)
	run := seedBits(t, e)
	ctx := context.Background()
	// A space whose names need escaping, next to photos, with its report.
	acct, store, space := "acme & co", "1", "photos/2026 #1?x=y"
	for i, c := range []int{1, 1, 8} {
		res := bitlog.ResultSuccess
		if c == 8 {
			res = bitlog.ResultError
		}
		if err := e.bits.Record(ctx, bitlog.Row{RunID: run, Account: acct, StoreID: store, SpaceID: space, ContentID: "odd-" + string(rune('a'+i)), Result: res, Case: c}); err != nil {
			t.Fatal(err)
		}
	}
	loc := filepath.Join(e.dir, "reports", "odd.tsv")
	if err := os.WriteFile(loc, []byte("date_checked\tcontent_id\n2026-05-01\todd-a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.bits.PutReport(ctx, bitlog.Report{RunID: run, Account: acct, StoreID: store, SpaceID: space, Result: bitlog.ResultError,
		Counts: bitlog.Counts{Total: 3, Success: 2, Error: 1}, Location: loc}); err != nil {
		t.Fatal(err)
	}

	get := func(u string) string {
		t.Helper()
		resp, body := e.do(e.viewer, "GET", u, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s (a link the console rendered): %d\n%s", u, resp.StatusCode, body)
		}
		return body
	}
	// Every link of the runs, run and space pages answers 200.
	runs := get("/bit")
	runPage := get(link(t, runs, "<code>"+run))
	follow := func(page string) {
		t.Helper()
		for _, l := range links(page) {
			if strings.HasPrefix(l, "/bit/report.tsv") {
				// docs' report lies outside the reports directory: 403.
				if resp, _ := e.do(e.viewer, "GET", l, nil); resp.StatusCode != 200 && resp.StatusCode != http.StatusForbidden {
					t.Errorf("GET %s (a report link the console rendered): %d", l, resp.StatusCode)
				}
			} else if strings.HasPrefix(l, "/bit") {
				get(l)
			}
		}
	}
	follow(runs)
	follow(runPage)
	for _, sp := range []struct{ name, contentA, other string }{{"photos", "a.jpg", "odd-a"}, {html.EscapeString(space), "odd-a", "a.jpg"}} {
		spacePage := get(link(t, runPage, regexp.QuoteMeta(sp.name)+"<"))
		if !strings.Contains(spacePage, `id="tsv"`) {
			t.Fatalf("the space page of %s has no report link:\n%s", sp.name, spacePage)
		}
		// The report.
		resp, tsv := e.do(e.viewer, "GET", link(t, spacePage, ""+`Download the report`), nil)
		if resp.StatusCode != 200 || !strings.HasPrefix(tsv, "date_checked\t") {
			t.Errorf("the report link of %s: %d %q", sp.name, resp.StatusCode, tsv)
		}
		// The filters: all results of the space, and the case-8 errors.
		all := get(link(t, spacePage, "All results of the space"))
		if !strings.Contains(all, ">"+sp.contentA+"<") || strings.Contains(all, ">"+sp.other+"<") {
			t.Errorf("all results of %s:\n%s", sp.name, all)
		}
		var errs string
		for _, l := range links(spacePage) {
			if u, _ := url.Parse(l); u.Path == "/bit/results" && u.Query().Get("case") == "8" {
				errs = get(l)
			}
		}
		if want := map[string]string{"photos": "h.jpg"}[sp.name]; want != "" && (!strings.Contains(errs, ">"+want+"<") || strings.Contains(errs, ">a.jpg<")) {
			t.Errorf("the case-8 link of %s:\n%s", sp.name, errs)
		} else if want == "" && (!strings.Contains(errs, ">odd-c<") || strings.Contains(errs, ">odd-a<")) {
			t.Errorf("the case-8 link of %s:\n%s", sp.name, errs)
		}
		follow(spacePage)
	}
	// The runs page's filters.
	failures := get(link(t, runs, "errors"))
	if !strings.Contains(failures, ">h.jpg<") || strings.Contains(failures, ">a.jpg<") {
		t.Errorf("the errors link of the run:\n%s", failures)
	}
}

// TestBadInputIs400: a NUL, invalid UTF-8, an over-long value, a malformed
// query string or a value outside its set, in any page's query, is a 400
// that says what is wrong — never a 500, never a page that ignores it.
func TestBadInputIs400(t *testing.T) {
	e := newEnv(t)
	run := seedBits(t, e)
	nulToken := base64.RawURLEncoding.EncodeToString([]byte(`["` + run + `","acme\u0000","1","photos","a.jpg"]`))
	for _, path := range []string{
		"/bit/results?account=acme%00",
		"/bit/results?run=" + run + "%00",
		"/bit/space?run=" + run + "&account=acme&store=1&space=pho%00tos",
		"/bit/report.tsv?run=" + run + "&account=acme&store=1%00&space=photos",
		"/bit/run?run=%FF%FE",
		"/bit/results?space=" + strings.Repeat("x", 300),
		"/bit/results?account=" + strings.Repeat("x", 5000),
		"/bit/results?repaired=yes",
		"/bit/results?result=MAYBE",
		"/bit/results?case=twelve",
		"/bit/results?after=" + nulToken,
		"/bit/results?run=%zz",
		"/bit/results?run=a;b",
		"/dead-letters?type=%00",
		"/dead-letters?error=%C0%AF",
		"/dead-letters?page=two",
		"/dead-letters?page=99999999999999999999",
		"/dead-letters/redrive?keep=yes",
		"/fleet?all=yes",
		"/changes?after=%00",
		"/policies?msg=%FF",
		"/policies/acme%00",
	} {
		resp, body := e.do(e.operator, "GET", path, nil)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "<h1>Bad") && !strings.Contains(body, `id="redrive-error"`) {
			t.Errorf("GET %s: %d, want 400 with a reason\n%.300s", path, resp.StatusCode, body)
		}
	}
}
