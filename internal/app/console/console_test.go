package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/fleet/memfleet"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/app/console/auth/albtest"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/stores"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
)

const registryJSON = `{"accounts": [
  {"id": "acme", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": "/srv/acme-1"},
    {"id": "2", "kind": "fs", "root": "/srv/acme-2"},
    {"id": "3", "kind": "fs", "root": "/srv/acme-3"}]},
  {"id": "globex", "status": "active", "stores": [
    {"id": "1", "primary": true, "kind": "fs", "root": "/srv/globex-1"},
    {"id": "2", "kind": "fs", "root": "/srv/globex-2"}]}]}`

// env is a console on in-memory and directory backends, with three users.
type env struct {
	t                     *testing.T
	srv                   *httptest.Server
	console               *console.Server
	dir                   string
	files                 configstore.Store
	changes               changelog.Log
	queues                map[string]*memqueue.Queue
	bits                  *membitlog.Log
	fleet                 *memfleet.Registry
	clock                 *clock.Fake
	admin, admin2, viewer string
	operator              string
}

// newEnv makes the env; opts change the console's configuration.
func newEnv(t *testing.T, opts ...func(*console.Config)) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), clock: clock.NewFake(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))}
	cfgDir := filepath.Join(e.dir, "config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(cfgDir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(stores.FileName, registryJSON)
	write(policy.FileName("acme"), `{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "1", "destStoreId": "2"}]}, "spacesToIgnore": ["scratch"]}`)
	write(policy.AccountsFile, `["acme"]`)
	files, err := fsconfigstore.New(cfgDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.files = files
	if e.changes, err = fschangelog.New(filepath.Join(e.dir, "changes")); err != nil {
		t.Fatal(err)
	}
	var tokens *auth.Tokens
	tokens, e.admin, e.admin2, e.viewer, e.operator = users(t, "")
	e.queues = map[string]*memqueue.Queue{}
	for _, k := range queue.AllKeys {
		e.queues[k] = memqueue.New("mill-"+k, memqueue.Config{Clock: e.clock})
	}
	e.bits = membitlog.New(e.clock)
	e.fleet = memfleet.New(e.clock)
	reader := queuestats.New("mill-", func(_ context.Context, key, _ string) (queue.Queue, error) { return e.queues[key], nil }, nil).WithFleet(e.fleet)
	dead, err := deadletter.New(deadletter.Config{Queue: e.queues[queue.KeyDeadLetter], Prefix: "mill-", Wait: -1,
		Open: func(_ context.Context, name string) (queue.Queue, error) {
			return e.queues[strings.TrimPrefix(name, "mill-")], nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := console.Config{
		Auth: tokens, Files: files, Changes: e.changes, Queues: reader, BitLog: e.bits, DeadLetters: dead, Fleet: e.fleet,
		Reports: fsreportstore.Store{Dir: filepath.Join(e.dir, "reports")}, Clock: e.clock,
		Logger: slogtest.New(t, slog.LevelInfo),
	}
	for _, o := range opts {
		o(&cfg)
	}
	c, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.console = c
	e.srv = httptest.NewServer(c.Handler())
	t.Cleanup(e.srv.Close)
	return e
}

// users writes a tokens file of two admins (ana, bo), a viewer (vic) and
// an operator (oli), their names followed by domain, and returns it with
// their tokens.
func users(t *testing.T, domain string) (tokens *auth.Tokens, ana, bo, vic, oli string) {
	t.Helper()
	ana, bo, vic, oli = auth.NewToken(), auth.NewToken(), auth.NewToken(), auth.NewToken()
	var lines []string
	for _, u := range []struct {
		name string
		role auth.Role
		tok  string
	}{{"ana", auth.RoleAdmin, ana}, {"bo", auth.RoleAdmin, bo}, {"vic", auth.RoleViewer, vic}, {"oli", auth.RoleOperator, oli}} {
		l, err := auth.TokenLine(u.name+domain, u.role, u.tok)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens, err := auth.NewTokens(file)
	if err != nil {
		t.Fatal(err)
	}
	return tokens, ana, bo, vic, oli
}

// do sends a request as the user of tok ("" for none); form non-nil makes
// it a same-origin form POST.
func (e *env) do(tok, method, path string, form url.Values, hdr ...string) (*http.Response, string) {
	e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.srv.URL+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", e.srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (e *env) policy(account string) *policy.Policy {
	e.t.Helper()
	p, err := policy.NewDir(filepath.Join(e.dir, "config")).Policy(context.Background(), account)
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}

func (e *env) listed() []string {
	e.t.Helper()
	l, err := policy.NewDir(filepath.Join(e.dir, "config")).Accounts(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/policies", "/queues", "/login", "/assets/console.css", "/nope", "/healthz"} {
		resp, _ := e.do(e.viewer, "GET", p, nil)
		h := resp.Header
		if h.Get("Content-Security-Policy") != console.CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: headers %v", p, h)
		}
	}
	if !strings.Contains(console.CSP, "script-src 'self'") || strings.Contains(console.CSP, "unsafe") {
		t.Errorf("CSP %q", console.CSP)
	}
}

// No template has an inline script, an inline style or an event handler
// attribute: the CSP would block them, and they are how injected markup
// runs.
func TestNoInlineScriptOrStyleNorSecret(t *testing.T) {
	e := newEnv(t)
	bad := regexp.MustCompile(`(?i)<script(?:[^>]*)>\s*[^<\s]|<style|\sstyle=|\son[a-z]+=|javascript:`)
	for _, p := range []string{"/policies", "/policies/acme", "/policies/acme/edit", "/policies/acme/history", "/queues", "/bit", "/changes", "/dead-letters", "/fleet", "/statistics", "/login"} {
		_, body := e.do(e.admin, "GET", p, nil)
		if m := bad.FindString(body); m != "" {
			t.Errorf("%s has inline script or style: %q", p, m)
		}
		// No secret: not the user's token, nor its hash.
		if strings.Contains(body, e.admin) || strings.Contains(body, strings.TrimPrefix(auth.HashToken(e.admin), "sha256:")) {
			t.Errorf("%s shows the user's token", p)
		}
	}
}

// The vendored htmx is the npm release, unmodified.
func TestVendoredHTMX(t *testing.T) {
	e := newEnv(t)
	_, body := e.do("", "GET", "/assets/htmx.min.js", nil)
	sum := sha256.Sum256([]byte(body))
	if got := hex.EncodeToString(sum[:]); got != "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717" {
		t.Errorf("htmx.min.js SHA-256 %s: not htmx.org@2.0.11's dist/htmx.min.js (see assets/README.md)", got)
	}
	if _, lic := e.do("", "GET", "/assets/htmx.LICENSE.txt", nil); !strings.Contains(lic, "Zero-Clause BSD") {
		t.Error("htmx's licence notice is not served")
	}
}

func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	resp, _ := e.do("", "GET", "/policies", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login" {
		t.Errorf("anonymous GET: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = e.do("", "POST", "/policies/acme/listed", url.Values{"listed": {"false"}})
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous POST: %d", resp.StatusCode)
	}
	resp, _ = e.do(auth.NewToken(), "GET", "/policies", nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("unknown token: %d", resp.StatusCode)
	}
	// The login form sets an HttpOnly, SameSite=Strict cookie.
	resp, _ = e.do("", "POST", "/login", url.Values{"token": {e.viewer}})
	ck := resp.Cookies()
	if resp.StatusCode != http.StatusSeeOther || len(ck) != 1 || ck[0].Name != auth.CookieName || !ck[0].HttpOnly || ck[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("login: %d %v", resp.StatusCode, ck)
	}
	resp, body := e.do("", "GET", "/policies", nil, "Cookie", auth.CookieName+"="+ck[0].Value)
	if resp.StatusCode != 200 || !strings.Contains(body, ">vic<") {
		t.Errorf("with the cookie: %d", resp.StatusCode)
	}
	resp, body = e.do("", "POST", "/login", url.Values{"token": {"millc_nope"}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "not valid") || strings.Contains(body, "millc_nope") {
		t.Errorf("bad login: %d", resp.StatusCode)
	}
}

func TestViewerCannotEdit(t *testing.T) {
	e := newEnv(t)
	for _, p := range []string{"/policies", "/policies/acme", "/policies/acme/history"} {
		resp, body := e.do(e.viewer, "GET", p, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
		for _, control := range []string{`id="edit"`, `/listed"`, `/delete"`, `/restore"`, `id="create"`} {
			if strings.Contains(body, control) {
				t.Errorf("viewer sees %s on %s", control, p)
			}
		}
	}
	before := e.policy("acme")
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{"/policies/acme/save", url.Values{"policy": {`{"spaceDuplicationStorePolicies": {}}`}}},
		{"/policies/acme/listed", url.Values{"listed": {"false"}}},
		{"/policies/acme/delete", url.Values{"confirm": {"acme"}}},
		{"/policies/acme/restore", url.Values{"version": {"00000001"}}},
		{"/policies/acme/edit", url.Values{"op": {"preview"}}},
	} {
		resp, _ := e.do(e.viewer, "POST", f.path, f.form)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d, want 403", f.path, resp.StatusCode)
		}
	}
	if resp, _ := e.do(e.viewer, "GET", "/policies/acme/edit", nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("viewer GET edit: %d", resp.StatusCode)
	}
	if !e.policy("acme").Equal(before) || len(e.listed()) != 1 {
		t.Error("a viewer's forged POST changed something")
	}
	if ch, _, _ := e.changes.List(context.Background(), "", 10); len(ch) != 0 {
		t.Errorf("changes recorded: %+v", ch)
	}
}

func TestCrossOriginPostRefused(t *testing.T) {
	e := newEnv(t)
	for name, hdr := range map[string][]string{
		"fetch metadata": {"Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"},
		"origin only":    {"Sec-Fetch-Site", "", "Origin", "https://evil.example"},
	} {
		resp, body := e.do(e.admin, "POST", "/policies/acme/listed", url.Values{"listed": {"false"}}, hdr...)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "Cross-origin request refused") {
			t.Errorf("%s: %d", name, resp.StatusCode)
		}
	}
	if l := e.listed(); len(l) != 1 {
		t.Errorf("a cross-origin POST unlisted the account: %v", l)
	}
}

var rowProblem = regexp.MustCompile(`(?s)id="row-(\d+)"[^>]*class="has-problems".*?<ul class="problems" role="alert"><li>([^<]*)</li>`)

func TestEditPreviewSave(t *testing.T) {
	e := newEnv(t)
	resp, body := e.do(e.admin, "GET", "/policies/acme/edit", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("edit: %d", resp.StatusCode)
	}
	base := regexp.MustCompile(`name="base" value="([^"]*)"`).FindStringSubmatch(body)
	if base == nil || base[1] == "" {
		t.Fatal("no base version in the editor")
	}
	form := url.Values{"base": {htmlUnescape(base[1])}, "s0": {"photos"}, "s0.0.src": {"1"}, "s0.0.dst": {"2"}, "ignore": {"scratch"}}

	// Add a space: a new row, prefilled primary → first other store.
	add := clone(form)
	add.Set("op", "add-space")
	_, body = e.do(e.admin, "POST", "/policies/acme/edit", add)
	if !strings.Contains(body, `name="s1"`) || !strings.Contains(body, `id="s1.0.src"`) {
		t.Fatal("add-space did not add a row")
	}

	// A store the account does not have: refused next to its row.
	form.Set("s1", "video")
	form.Set("s1.0.src", "1")
	form.Set("s1.0.dst", "9")
	chk := clone(form)
	chk.Set("op", "preview")
	resp, body = e.do(e.admin, "POST", "/policies/acme/edit", chk)
	m := rowProblem.FindStringSubmatch(body)
	if resp.StatusCode != http.StatusUnprocessableEntity || m == nil || m[1] != "1" || !strings.Contains(m[2], `store &#34;9&#34; is not a registered store`) {
		t.Fatalf("preview of a bad policy: %d %v", resp.StatusCode, m)
	}

	// Fixed: the preview shows the diff and carries the file.
	form.Set("s1.0.dst", "3")
	chk = clone(form)
	chk.Set("op", "preview")
	resp, body = e.do(e.admin, "POST", "/policies/acme/edit", chk)
	if resp.StatusCode != 200 || !strings.Contains(htmlUnescape(body), `+ space "video": 1→3`) {
		t.Fatalf("preview: %d\n%s", resp.StatusCode, body)
	}
	j := regexp.MustCompile(`(?s)name="policy" value="([^"]*)"`).FindStringSubmatch(body)
	if j == nil {
		t.Fatal("no policy in the preview")
	}
	policyJSON := htmlUnescape(j[1])

	// A second admin saves first, from the same base.
	other := url.Values{"base": {htmlUnescape(base[1])}, "policy": {`{"spaceDuplicationStorePolicies": {"photos": [{"srcStoreId": "1", "destStoreId": "3"}]}, "spacesToIgnore": ["scratch"]}`}}
	if resp, _ := e.do(e.admin2, "POST", "/policies/acme/save", other); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bo's save: %d", resp.StatusCode)
	}
	// Ana's save is refused: a conflict page naming bo, nothing written.
	resp, body = e.do(e.admin, "POST", "/policies/acme/save", url.Values{"base": {htmlUnescape(base[1])}, "policy": {policyJSON}})
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `id="other-author">bo<`) {
		t.Fatalf("stale save: %d", resp.StatusCode)
	}
	if sp := e.policy("acme").StorePolicies("photos"); len(sp) != 1 || sp[0].DestStoreID != "3" {
		t.Fatalf("after the refused save photos is %v, want bo's 1→3", sp)
	}
	// Against the latest version, Ana's save goes through.
	latest := regexp.MustCompile(`(?s)id="edit-on-latest".*?`).MatchString(body)
	cur, err := e.files.Get(context.Background(), policy.FileName("acme"))
	if err != nil || !latest {
		t.Fatalf("conflict page: %v", err)
	}
	resp, _ = e.do(e.admin, "POST", "/policies/acme/save", url.Values{"base": {cur.Version.ETag}, "policy": {policyJSON}})
	if resp.StatusCode != http.StatusSeeOther || !strings.Contains(resp.Header.Get("Location"), "msg=saved") {
		t.Fatalf("save: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	p := e.policy("acme")
	if sp := p.StorePolicies("video"); len(sp) != 1 || sp[0] != (policy.StorePolicy{SrcStoreID: "1", DestStoreID: "3"}) {
		t.Fatalf("saved policy %+v", p)
	}
	f, _ := e.files.Get(context.Background(), policy.FileName("acme"))
	if f.Version.Meta.Author != "ana" {
		t.Errorf("version author %q", f.Version.Meta.Author)
	}
	ch, _, err := e.changes.List(context.Background(), "", 10)
	if err != nil || len(ch) != 2 || ch[0].User != "ana" || ch[0].Action != "policy.save" || ch[1].User != "bo" || !strings.Contains(ch[0].Detail, `space "video"`) {
		t.Fatalf("change log %+v, %v", ch, err)
	}
	_, body = e.do(e.viewer, "GET", "/changes", nil)
	if !strings.Contains(body, "policy.save") || !strings.Contains(body, "ana") {
		t.Error("the changes page does not show the save")
	}
}

func TestHistoryRestoreDeleteListing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	first, _ := e.files.Get(ctx, policy.FileName("acme"))
	save := func(j string) {
		t.Helper()
		cur, _ := e.files.Get(ctx, policy.FileName("acme"))
		if resp, _ := e.do(e.admin, "POST", "/policies/acme/save", url.Values{"base": {cur.Version.ETag}, "policy": {j}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("save: %d", resp.StatusCode)
		}
	}
	save(`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`)
	_, body := e.do(e.viewer, "GET", "/policies/acme/history", nil)
	if strings.Count(body, "<tr") != 3 || !strings.Contains(body, ">ana<") {
		t.Fatalf("history:\n%s", body)
	}
	cur, _ := e.files.Get(ctx, policy.FileName("acme"))
	resp, _ := e.do(e.admin, "POST", "/policies/acme/restore", url.Values{"version": {first.Version.ID}, "base": {cur.Version.ETag}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("restore: %d", resp.StatusCode)
	}
	if sp := e.policy("acme").StorePolicies("photos"); len(sp) != 1 || sp[0].DestStoreID != "2" {
		t.Fatalf("restored policy: %v", sp)
	}
	// A restore based on an old version is refused.
	if resp, _ := e.do(e.admin, "POST", "/policies/acme/restore", url.Values{"version": {first.Version.ID}, "base": {cur.Version.ETag}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("stale restore: %d", resp.StatusCode)
	}

	// Unlist, list.
	if resp, _ := e.do(e.admin, "POST", "/policies/acme/listed", url.Values{"listed": {"false"}}); resp.StatusCode != http.StatusSeeOther || len(e.listed()) != 0 {
		t.Fatalf("unlist: %d %v", resp.StatusCode, e.listed())
	}
	if resp, _ := e.do(e.admin, "POST", "/policies/acme/listed", url.Values{"listed": {"true"}}); resp.StatusCode != http.StatusSeeOther || len(e.listed()) != 1 {
		t.Fatalf("list: %d %v", resp.StatusCode, e.listed())
	}
	// globex has no policy: listing it is refused.
	if resp, _ := e.do(e.admin, "POST", "/policies/globex/listed", url.Values{"listed": {"true"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("listing without a policy: %d", resp.StatusCode)
	}

	// Delete needs the account typed, and the current version.
	cur, _ = e.files.Get(ctx, policy.FileName("acme"))
	if resp, _ := e.do(e.admin, "POST", "/policies/acme/delete", url.Values{"base": {cur.Version.ETag}, "confirm": {"acm"}}); resp.StatusCode != http.StatusUnprocessableEntity {
		t.Errorf("unconfirmed delete: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.admin, "POST", "/policies/acme/delete", url.Values{"base": {first.Version.ETag + "x"}, "confirm": {"acme"}}); resp.StatusCode != http.StatusConflict {
		t.Errorf("stale delete: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.admin, "POST", "/policies/acme/delete", url.Values{"base": {cur.Version.ETag}, "confirm": {"acme"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("delete: %d", resp.StatusCode)
	}
	if _, err := policy.NewDir(filepath.Join(e.dir, "config")).Policy(ctx, "acme"); err == nil || len(e.listed()) != 0 {
		t.Fatal("not deleted and unlisted")
	}
	_, body = e.do(e.viewer, "GET", "/policies/acme/history", nil)
	if !strings.Contains(body, "deleted") || !strings.Contains(body, ">ana<") {
		t.Error("the history does not show who deleted")
	}

	// Create a policy for globex.
	resp, body = e.do(e.admin, "GET", "/policies/globex/edit", nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "New policy for") {
		t.Fatalf("create editor: %d", resp.StatusCode)
	}
	if resp, _ := e.do(e.admin, "POST", "/policies/globex/save", url.Values{"base": {""}, "list": {"on"},
		"policy": {`{"spaceDuplicationStorePolicies": {}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if l := e.listed(); len(l) != 1 || l[0] != "globex" {
		t.Errorf("after create listed %v", l)
	}
	ch, _, _ := e.changes.List(ctx, "", 20)
	var actions []string
	for _, c := range ch {
		actions = append(actions, c.Action)
	}
	want := "policy.create policy.delete accounts.list accounts.unlist policy.restore policy.save"
	if strings.Join(actions, " ") != want {
		t.Errorf("changes %q, want %q", strings.Join(actions, " "), want)
	}
}

func TestQueuesPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.queues[queue.KeyDupLow].Send(ctx, queue.SendEntry{Body: []byte("a")}, queue.SendEntry{Body: []byte("b")}); err != nil {
		t.Fatal(err)
	}
	if err := e.queues[queue.KeyDeadLetter].Send(ctx, queue.SendEntry{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	_, body := e.do(e.viewer, "GET", "/queues", nil)
	row := regexp.MustCompile(`(?s)id="q-dup-low">.*?class="num visible">(\d+)<`).FindStringSubmatch(body)
	if row == nil || row[1] != "2" || !strings.Contains(body, `hx-trigger="every 5s"`) || !strings.Contains(body, "<polyline") {
		t.Fatalf("queues page:\n%s", body)
	}
	_, body = e.do(e.viewer, "GET", "/dead-letters", nil)
	if !strings.Contains(body, `<strong id="dl-matching">1</strong>`) {
		t.Error("the dead-letters page does not show the dead letter")
	}
}

// TestNotConfigured: without the dead-letter queue, the fleet registry or
// the statistics store their pages say what is missing (the dead-letter queue's depth, at
// least) and what to use meanwhile.
func TestNotConfigured(t *testing.T) {
	e := newEnv(t, func(c *console.Config) { c.DeadLetters, c.Fleet = nil, nil })
	if err := e.queues[queue.KeyDeadLetter].Send(context.Background(), queue.SendEntry{Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	_, body := e.do(e.viewer, "GET", "/dead-letters", nil)
	if !strings.Contains(body, `id="dlq-depth">1<`) || !strings.Contains(body, "millctl dlq") {
		t.Error("the dead-letters page does not show the depth and what to use meanwhile")
	}
	_, body = e.do(e.viewer, "GET", "/fleet", nil)
	if !strings.Contains(body, "no fleet registry") || !strings.Contains(body, "millctl fleet") {
		t.Error("the fleet page does not say what is missing")
	}
	if resp, _ := e.do(e.admin, "POST", "/fleet/pause", url.Values{"target": {"type:DUP"}}); resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		t.Errorf("pause without a registry: %d", resp.StatusCode)
	}
	// No statistics store (the env has none): the page says so, the CSV
	// is not there.
	_, body = e.do(e.viewer, "GET", "/statistics", nil)
	if !strings.Contains(body, "need the database") || !strings.Contains(body, "millctl stats") {
		t.Error("the statistics page does not say what is missing")
	}
	if resp, _ := e.do(e.viewer, "GET", "/statistics.csv", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("statistics.csv without a statistics store: %d", resp.StatusCode)
	}
}

func clone(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&#34;", `"`, "&quot;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">", "&#43;", "+", "&amp;", "&").Replace(s)
}

// Behind the load balancer: the user and role come from the signed header;
// a missing or forged one gets 401, and an operator may not edit.
func TestALBMode(t *testing.T) {
	e := newEnv(t)
	ks := albtest.NewKeyServer(t)
	alb, err := auth.NewALB(auth.ALBConfig{ARN: albtest.ARN, KeyURL: ks.URL, Issuer: albtest.Issuer, ClientID: albtest.Client,
		Roles: map[auth.Role][]string{auth.RoleAdmin: {"mill-admins"}, auth.RoleOperator: {"mill-ops"}}})
	if err != nil {
		t.Fatal(err)
	}
	reader := queuestats.New("mill-", func(_ context.Context, key, _ string) (queue.Queue, error) { return e.queues[key], nil }, nil)
	c, err := console.New(console.Config{Auth: alb, Files: e.files, Changes: e.changes, Queues: reader, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	e.console = c
	e.srv = httptest.NewServer(c.Handler())
	t.Cleanup(e.srv.Close)
	admin := ks.Sign(t, albtest.Token{Claims: map[string]any{"email": "ana@example.org", "groups": []string{"mill-admins"}}})
	operator := ks.Sign(t, albtest.Token{Claims: map[string]any{"email": "olu@example.org", "groups": []string{"mill-ops"}}})

	resp, body := e.do("", "GET", "/policies/acme", nil, auth.ALBHeader, admin)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="user">ana@example.org<`) || !strings.Contains(body, `id="edit"`) {
		t.Fatalf("admin: %d", resp.StatusCode)
	}
	resp, body = e.do("", "GET", "/policies/acme", nil, auth.ALBHeader, operator)
	if resp.StatusCode != 200 || !strings.Contains(body, `id="role">operator<`) || strings.Contains(body, `id="edit"`) {
		t.Fatalf("operator: %d", resp.StatusCode)
	}
	if resp, _ := e.do("", "POST", "/policies/acme/listed", url.Values{"listed": {"false"}}, auth.ALBHeader, operator); resp.StatusCode != http.StatusForbidden {
		t.Errorf("operator POST: %d", resp.StatusCode)
	}
	if resp, _ := e.do("", "GET", "/policies", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no header: %d", resp.StatusCode)
	}
	forged := ks.Sign(t, albtest.Token{Signer: strings.Replace(albtest.ARN, "mill-console", "other", 1), Claims: map[string]any{"email": "eve@example.org", "groups": []string{"mill-admins"}}})
	if resp, _ := e.do("", "GET", "/policies", nil, auth.ALBHeader, forged); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("another load balancer's token: %d", resp.StatusCode)
	}
	if resp, _ := e.do("", "POST", "/policies/acme/listed", url.Values{"listed": {"false"}}, auth.ALBHeader, admin); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("admin POST: %d", resp.StatusCode)
	}
	if ch, _, _ := e.changes.List(context.Background(), "", 1); len(ch) != 1 || ch[0].User != "ana@example.org" || ch[0].Role != "admin" {
		t.Errorf("change log %+v", ch)
	}
}
