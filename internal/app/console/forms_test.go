package console_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue"
)

// state is what a console's POST may change: the listed accounts, the
// policy files, the change log, the pauses, the queues.
func (e *env) state() string {
	e.t.Helper()
	ctx := context.Background()
	var b strings.Builder
	fmt.Fprintf(&b, "listed %q\n", e.listed())
	for _, a := range []string{"acme", "globex"} {
		if f, err := e.files.Get(ctx, policy.FileName(a)); err == nil {
			fmt.Fprintf(&b, "%s %s %q\n", a, f.Version.ETag, f.Data)
		} else {
			fmt.Fprintf(&b, "%s: %v\n", a, err)
		}
	}
	fmt.Fprintf(&b, "changes:\n%s", e.changeLog())
	ps, err := e.fleet.Pauses(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	fmt.Fprintf(&b, "pauses %d\n", len(ps))
	for _, k := range queue.AllKeys {
		fmt.Fprintf(&b, "%s %d\n", k, e.queues[k].Len())
	}
	return b.String()
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// TestFormsFailClosed: every POST of the console, sent with a body that
// cannot be read, that is empty, of another type, lacks a field, repeats
// one or holds a value other than those expected, answers 400 and changes
// nothing — an empty "listed" switch does not unlist, a purge that lost its
// filter does not purge the whole queue. The full form then works, so the
// 400s are the form's doing.
func TestFormsFailClosed(t *testing.T) {
	e := newEnv(t)
	seedDeadLetters(t, e)
	e.do(e.operator, "GET", "/dead-letters", nil)
	e.idle()
	ctx := context.Background()
	cur, _ := e.files.Get(ctx, policy.FileName("acme"))
	// A second version of acme, so a restore has one to go back to.
	if resp, _ := e.do(e.admin, "POST", "/policies/acme/save", url.Values{"base": {cur.Version.ETag}, "policy": {`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "3"}]}`}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("save: %d", resp.StatusCode)
	}
	first := cur.Version.ID

	etag := func() string {
		f, _ := e.files.Get(ctx, policy.FileName("acme"))
		return f.Version.ETag
	}
	type post struct {
		path, tok string
		form      func() url.Values
		required  []string // fields that must be sent
		enums     []string // fields with a fixed set of values (or a checkbox)
		want      int      // the full form's answer
	}
	values := func(kv ...string) func() url.Values {
		return func() url.Values {
			v := url.Values{}
			for i := 0; i+1 < len(kv); i += 2 {
				v.Set(kv[i], kv[i+1])
			}
			if v.Has("base") {
				v.Set("base", etag())
			}
			return v
		}
	}
	dl := func(kv ...string) func() url.Values { return func() url.Values { return dlPost(kv...) } }
	posts := []post{
		{"/policies/acme/listed", e.admin, values("listed", "false", "back", "account"), []string{"listed"}, []string{"listed", "back"}, http.StatusSeeOther},
		{"/policies/acme/edit", e.admin, values("base", "", "checked", "1", "op", "add-default"), []string{"base"}, []string{"checked", "list"}, http.StatusOK},
		{"/policies/acme/save", e.admin, values("policy", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`, "base", "", "list", "on"),
			[]string{"policy", "base"}, []string{"list"}, http.StatusSeeOther},
		{"/policies/acme/restore", e.admin, values("version", first, "base", ""), []string{"version", "base"}, nil, http.StatusSeeOther},
		{"/policies/acme/delete", e.admin, values("base", "", "confirm", "acme"), []string{"base", "confirm"}, nil, http.StatusSeeOther},
		{"/dead-letters/purge", e.operator, dl("type", "BIT", "expected", "50", "confirm", "purge"), []string{"type", "source", "error", "id", "expected", "confirm"}, nil, http.StatusSeeOther},
		{"/dead-letters/redrive", e.operator, dl("type", "DUP", "rate", "0", "to", "", "keep", "on"), []string{"type", "source", "error", "id", "rate", "to"}, []string{"keep"}, http.StatusSeeOther},
		{"/fleet/pause", e.operator, values("target", "type:DUP", "reason", "maintenance"), []string{"target", "reason"}, nil, http.StatusSeeOther},
		{"/fleet/resume", e.operator, values("target", "type:DUP"), []string{"target"}, nil, http.StatusSeeOther},
	}
	for _, pp := range posts {
		p := struct {
			post
			form url.Values
		}{pp, pp.form()}
		before := e.state()
		type variant struct {
			name, ctype string
			body        io.Reader
		}
		enc := func(v url.Values) io.Reader { return strings.NewReader(v.Encode()) }
		form := "application/x-www-form-urlencoded"
		vs := []variant{
			{"empty body", form, strings.NewReader("")},
			{"unreadable body", form, errReader{}},
			{"no content type", "", enc(p.form)},
			{"text/plain", "text/plain", enc(p.form)},
			{"JSON", "application/json", strings.NewReader(`{"listed": false}`)},
			{"malformed", form, strings.NewReader("listed=%zz&" + p.form.Encode())},
			{"over-long", form, strings.NewReader(p.form.Encode() + "&pad=" + strings.Repeat("x", 3<<20))},
		}
		for k := range p.form {
			if slices.Contains(p.required, k) {
				v := url.Values{}
				for k2, x := range p.form {
					if k2 != k {
						v[k2] = x
					}
				}
				vs = append(vs, variant{"without " + k, form, enc(v)})
			}
			twice := url.Values{}
			for k2, x := range p.form {
				twice[k2] = slices.Clone(x)
			}
			twice[k] = append(twice[k], "x")
			vs = append(vs, variant{k + " twice", form, enc(twice)})
			for name, bad := range map[string]string{"NUL": "a\x00b", "invalid UTF-8": "a\xffb", "a control character": "a\x1bb"} {
				v := url.Values{}
				for k2, x := range p.form {
					v[k2] = x
				}
				v.Set(k, p.form.Get(k)+bad)
				vs = append(vs, variant{name + " in " + k, form, enc(v)})
			}
		}
		for _, k := range p.enums {
			v := url.Values{}
			for k2, x := range p.form {
				v[k2] = x
			}
			v.Set(k, "yes")
			vs = append(vs, variant{k + "=yes", form, enc(v)})
		}
		for _, v := range vs {
			// Straight to the handler: the test's reader is the body.
			req := httptest.NewRequest("POST", p.path, v.body)
			if v.ctype != "" {
				req.Header.Set("Content-Type", v.ctype)
			}
			req.Header.Set("Authorization", "Bearer "+p.tok)
			rec := httptest.NewRecorder()
			e.console.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusBadRequest {
				t.Errorf("POST %s, %s: %d, want 400", p.path, v.name, rec.Code)
			}
		}
		if after := e.state(); after != before {
			t.Fatalf("POST %s: bad forms changed the state:\nbefore\n%s\nafter\n%s", p.path, before, after)
		}
		if resp, _ := e.do(p.tok, "POST", p.path, p.form); resp.StatusCode != p.want {
			t.Errorf("POST %s, the full form: %d, want %d", p.path, resp.StatusCode, p.want)
		}
		e.idle()
	}
}
