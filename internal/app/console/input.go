package console

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/millfleet/mill/internal/app/console/auth"
)

// Limits on what a request's path, query string and form may hold.
const (
	maxQueryBytes = 8 << 10
	maxParams     = 64
	maxParamName  = 64
	maxParamValue = 4 << 10
)

// checkText says what is wrong with a value from a request, or returns
// nil: it must be UTF-8 without NUL or other control characters (tab and
// line breaks aside) and at most max bytes.
func checkText(what, v string, max int) error {
	switch {
	case len(v) > max:
		return fmt.Errorf("%s is longer than %d bytes", what, max)
	case !utf8.ValidString(v):
		return fmt.Errorf("%s is not valid UTF-8", what)
	case strings.ContainsFunc(v, func(c rune) bool { return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f }):
		return fmt.Errorf("%s contains a NUL or another control character", what)
	}
	return nil
}

// checkValues checks the names and values of a query string or form.
func checkValues(kind string, vals url.Values, maxValue, maxN int) error {
	n := 0
	for k, vs := range vals {
		if err := checkText(kind+" parameter name "+quoteSafe(k), k, maxParamName); err != nil {
			return err
		}
		for _, v := range vs {
			if n++; n > maxN {
				return fmt.Errorf("the %s has more than %d parameters", kind, maxN)
			}
			if err := checkText(kind+" parameter "+quoteSafe(k), v, maxValue); err != nil {
				return err
			}
		}
	}
	return nil
}

// quoteSafe quotes a name for a message, or says it cannot be shown.
func quoteSafe(s string) string {
	if len(s) > maxParamName || !utf8.ValidString(s) {
		return "(unprintable)"
	}
	return fmt.Sprintf("%q", s)
}

// checkInput answers 400, before any page reads them, to a path or query
// string that is not UTF-8, holds a NUL or another control character, is
// malformed or over-long: such a value would otherwise reach a store (the
// bit log in PostgreSQL refuses it) and become a 500.
func (s *Server) checkInput(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := checkText("the path", r.URL.Path, maxQueryBytes)
		if err == nil && len(r.URL.RawQuery) > maxQueryBytes {
			err = fmt.Errorf("the query string is longer than %d bytes", maxQueryBytes)
		}
		if err == nil {
			var q url.Values
			if q, err = url.ParseQuery(r.URL.RawQuery); err != nil {
				err = errors.New("the query string is malformed")
			} else {
				err = checkValues("query", q, maxParamValue, maxParams)
			}
		}
		if err != nil {
			s.cfg.Logger.Warn("console: bad request refused", "method", r.Method, "path", r.URL.EscapedPath(), "remote", r.RemoteAddr, "err", err)
			s.errorPage(w, r, nil, http.StatusBadRequest, "Bad request", capitalize(err.Error())+".")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// form is a POST's fields, read by readForm. Its getters note what is
// missing or wrong; checkForm then answers 400 once for all of them, before
// anything changes. A field a handler needs is never taken as empty or
// false because it is absent.
type form struct {
	vals     url.Values
	problems []string
}

// readForm reads a POST's body: application/x-www-form-urlencoded, at most
// limit bytes, every name and value text (checkText). Anything else — an
// unreadable, over-long or malformed body, another content type — answers
// 400 and returns false. The fields come from the body only, never from the
// URL's query string.
func (s *Server) readForm(w http.ResponseWriter, r *http.Request, u *auth.User, limit int64) (*form, bool) {
	bad := func(text string) (*form, bool) {
		s.cfg.Logger.Warn("console: bad form refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "problem", text)
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad form", text)
		return nil, false
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return bad("The form must be sent as application/x-www-form-urlencoded; nothing was changed.")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if mb := (*http.MaxBytesError)(nil); errors.As(err, &mb) {
			return bad(fmt.Sprintf("The form is larger than %d bytes; nothing was changed.", limit))
		}
		return bad("The form could not be read; nothing was changed.")
	}
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return bad("The form is malformed; nothing was changed.")
	}
	if err := checkValues("form", vals, int(limit), int(limit)); err != nil {
		return bad(capitalize(err.Error()) + "; nothing was changed.")
	}
	r.PostForm, r.Form = vals, vals
	return &form{vals: vals}, true
}

func (f *form) problem(format string, a ...any) {
	f.problems = append(f.problems, fmt.Sprintf(format, a...))
}

// get returns a field's value and whether it was sent; sent more than
// once is a problem.
func (f *form) get(name string) (string, bool) {
	vs := f.vals[name]
	if len(vs) > 1 {
		f.problem("the field %q is sent %d times", name, len(vs))
		return "", true
	}
	if len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// opt returns a field that may be absent ("").
func (f *form) opt(name string) string {
	v, _ := f.get(name)
	return v
}

// req returns a field that must be sent (it may be empty).
func (f *form) req(name string) string {
	v, ok := f.get(name)
	if !ok {
		f.problem("the field %q is missing", name)
	}
	return v
}

// nonEmpty returns a field that must be sent and not be empty.
func (f *form) nonEmpty(name string) string {
	v, ok := f.get(name)
	if !ok || v == "" {
		f.problem("the field %q is missing or empty", name)
	}
	return v
}

// oneOf returns a field that must be sent with one of the values allowed.
func (f *form) oneOf(name string, allowed ...string) string {
	v, ok := f.get(name)
	switch {
	case !ok:
		f.problem("the field %q is missing", name)
	case !slices.Contains(allowed, v):
		f.problem("the field %q is %s; want %s", name, quoteSafe(v), strings.Join(allowed, " or "))
		return ""
	}
	return v
}

// flag returns whether a checkbox whose value is on is ticked: absent is
// false, another value is a problem.
func (f *form) flag(name, on string) bool {
	v, ok := f.get(name)
	if ok && v != on {
		f.problem("the field %q is %s; want %q or nothing", name, quoteSafe(v), on)
		return false
	}
	return ok
}

// postForm reads a POST's form (readForm, at most limit bytes), lets read
// take its fields with the getters, then answers 400 for every problem
// they noted (checkForm). It returns false when it has answered: the
// handler returns, having changed nothing. One call does all three, so no
// handler acts on fields whose problems were not checked.
func (s *Server) postForm(w http.ResponseWriter, r *http.Request, u *auth.User, limit int64, read func(f *form)) bool {
	f, ok := s.readForm(w, r, u, limit)
	if !ok {
		return false
	}
	read(f)
	return s.checkForm(w, r, u, f)
}

// checkForm answers 400 listing the problems, and returns false, when
// there are any.
func (s *Server) checkForm(w http.ResponseWriter, r *http.Request, u *auth.User, f *form) bool {
	if len(f.problems) == 0 {
		return true
	}
	s.cfg.Logger.Warn("console: incomplete form refused", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr, "problems", f.problems)
	s.errorPage(w, r, u, http.StatusBadRequest, "Bad form",
		capitalize(strings.Join(f.problems, "; "))+". Nothing was changed; reload the page and try again.")
	return false
}
