package console_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
)

// TestBrowserBitLinks clicks through the bit pages in Chromium against
// PostgreSQL and the emulator: the run's link, a space, the case filter of
// the space, the run's failures and the results page's filter form each
// show only the rows they name; the report's link downloads the report.
// The links were escaped twice: every filter showed every row and the
// download answered 400.
func TestBrowserBitLinks(t *testing.T) {
	b := newBrowserEnv(t)
	tab := b.tab()
	b.login(tab, b.viewer)

	// rows returns the content ids the results table shows.
	rows := func() []string {
		t.Helper()
		var ids []string
		b.run(tab, chromedp.WaitVisible("#results", chromedp.ByQuery),
			eval(`Array.from(document.querySelectorAll("#results td.content-id")).map(td => td.textContent)`, &ids))
		return ids
	}
	// click follows a link or submits a form, found by XPath (by its text,
	// not by its URL: the URL is what is under test).
	click := func(xpath string) {
		t.Helper()
		if st := b.navigate(tab, chromedp.Click(xpath, chromedp.BySearch)); st != 200 {
			t.Fatalf("click %s: status %d", xpath, st)
		}
	}

	b.run(tab, chromedp.Navigate(b.url+"/bit"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	click(`//table[@id="runs"]//a[text()="failures"]`)
	if ids := rows(); len(ids) != 1 || ids[0] != "2026/img-0031.jpg" {
		t.Errorf("the run's failures link shows %q, want the one failure", ids)
	}

	b.run(tab, chromedp.Navigate(b.url+"/bit"), chromedp.WaitVisible("#runs", chromedp.ByQuery))
	click(`//table[@id="runs"]//a[code]`)
	b.run(tab, chromedp.WaitVisible("#reports", chromedp.ByQuery))
	click(`//table[@id="reports"]//a[text()="photos"]`)
	b.run(tab, chromedp.WaitVisible("#cases", chromedp.ByQuery))
	var spaceURL string
	b.run(tab, chromedp.Location(&spaceURL))

	// The case-8 row's link: the one item missing from storage.
	click(`//table[@id="cases"]//tr[td[1]="8"]//a`)
	if ids := rows(); len(ids) != 1 || ids[0] != "2026/img-0023.jpg" {
		t.Errorf("the case-8 link shows %q, want the one case-8 item", ids)
	}
	// All results of the space: its 40 items, none of docs.
	b.run(tab, chromedp.Navigate(spaceURL), chromedp.WaitVisible("#cases", chromedp.ByQuery))
	click(`//a[text()="All results of the space"]`)
	ids := rows()
	if len(ids) != 40 || strings.Contains(strings.Join(ids, " "), "doc-") {
		t.Errorf("all results of photos: %d rows (%.200q), want its 40", len(ids), ids)
	}

	// The report: the link downloads the file from the reports bucket.
	dir := t.TempDir()
	done := make(chan string, 1)
	listen := func(ev any) {
		if e, ok := ev.(*browser.EventDownloadProgress); ok && e.State == browser.DownloadProgressStateCompleted {
			select {
			case done <- e.GUID:
			default:
			}
		}
	}
	chromedp.ListenTarget(tab, listen)
	chromedp.ListenBrowser(tab, listen)
	b.run(tab, chromedp.Navigate(spaceURL), chromedp.WaitVisible("#tsv", chromedp.ByQuery),
		browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorAllowAndName).WithDownloadPath(dir).WithEventsEnabled(true),
		chromedp.Click("#tsv", chromedp.ByQuery))
	select {
	case guid := <-done:
		data, err := os.ReadFile(filepath.Join(dir, guid))
		if err != nil || !strings.HasPrefix(string(data), "date_checked\taccount\t") {
			t.Errorf("the downloaded report: %q, %v", data, err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the report link downloaded nothing within 30 s")
	}

	// The results page's filter form.
	b.run(tab, chromedp.Navigate(b.url+"/bit/results"), chromedp.WaitVisible("#filters", chromedp.ByQuery),
		chromedp.SetValue(`#filters input[name="space"]`, "photos", chromedp.ByQuery),
		chromedp.SetValue(`#filters select[name="case"]`, "5", chromedp.ByQuery))
	click(`//form[@id="filters"]//button[@type="submit"]`)
	if ids := rows(); len(ids) != 1 || ids[0] != "2026/img-0031.jpg" {
		t.Errorf("the filter form (photos, case 5) shows %q", ids)
	}
}
