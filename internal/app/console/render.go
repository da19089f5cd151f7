package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/spacestats"
)

// page is what every template gets.
type page struct {
	Title   string
	Nav     string // the active navigation entry
	User    *auth.User
	Refresh time.Duration
	Where   string
	Msg     string // a notice shown at the top
	Data    any
}

var funcs = template.FuncMap{
	// can reports whether the user may do what needs role ("viewer",
	// "operator", "admin").
	"can": func(u *auth.User, role string) bool {
		r, err := auth.ParseRole(role)
		return err == nil && u != nil && u.Role.Can(r)
	},
	"ts": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"ago":  ago,
	"dash": func(s string) string { return cmpOr(s, "—") },
	"shortv": func(id string) string {
		if len(id) > 12 {
			return id[:12] + "…"
		}
		return id
	},
	"add":   func(a, b int) int { return a + b },
	"join":  strings.Join,
	"lower": func(v any) string { return strings.ToLower(fmt.Sprint(v)) },
	"seconds": func(d time.Duration) int {
		return int(d / time.Second)
	},
	"hasPrefix":   strings.HasPrefix,
	"hasVersions": hasVersions,
	"fmtBytes":    spacestats.FormatBytes,
	// path and link build the URLs of links and forms (see urlPath and
	// urlQuery): never interpolate a value into a URL in a template.
	"path":  urlPath,
	"link":  urlQuery,
	"dur":   human,
	"list":  func(s ...string) []string { return s },
	"cases": func() []int { return []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} },
	// dict builds the argument of a sub-template: key, value, key, value…
	"dict": func(kv ...any) (map[string]any, error) {
		if len(kv)%2 != 0 {
			return nil, fmt.Errorf("dict: odd number of arguments")
		}
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			k, ok := kv[i].(string)
			if !ok {
				return nil, fmt.Errorf("dict: key %v is not a string", kv[i])
			}
			m[k] = kv[i+1]
		}
		return m, nil
	},
}

// urlPath returns the path of the segments, each escaped: path "policies"
// acct "edit" is /policies/ACCT/edit whatever ACCT holds ("/", "?", "#"…).
// html/template leaves an escaped URL as it is (it normalises, and does not
// escape again, what starts a URL attribute), so the value is escaped once.
func urlPath(segments ...string) string {
	var b strings.Builder
	for _, s := range segments {
		b.WriteByte('/')
		b.WriteString(url.PathEscape(s))
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}

// urlQuery returns path with the query of the key, value pairs (pairs with
// an empty value left out), encoded with url.Values.
func urlQuery(path string, kv ...string) (string, error) {
	if len(kv)%2 != 0 {
		return "", fmt.Errorf("link %s: odd number of arguments", path)
	}
	v := url.Values{}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Add(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return path, nil
	}
	return path + "?" + v.Encode(), nil
}

// human writes a duration for people: "5 s", "30 min", "1 h".
func human(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Seconds()))
	case d < time.Hour && d%time.Minute == 0:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d%time.Hour == 0:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return d.Round(time.Second).String()
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// ago writes how long ago t was ("3 min ago").
func ago(now, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	d := now.Sub(t)
	switch {
	case d < 0:
		return "just now"
	case d < time.Minute:
		return fmt.Sprintf("%d s ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d.Hours()))
	}
	return fmt.Sprintf("%d days ago", int(d.Hours()/24))
}

// parseTemplates parses each page template with the layout and the shared
// partials.
func parseTemplates() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, n := range names {
		base := path.Base(n)
		if base == "layout.html" || base == "partials.html" {
			continue
		}
		t, err := template.New(base).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", base, err)
		}
		out[strings.TrimSuffix(base, ".html")] = t
	}
	return out, nil
}

// render writes a page with the layout. The page is rendered to a buffer
// first, so a template error becomes a 500, never half a page.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t, ok := s.tmpl[name]
	if !ok {
		s.cfg.Logger.Error("console: no template", "name", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	if p.User == nil {
		p.User, _ = r.Context().Value(userKey{}).(*auth.User)
	}
	p.Refresh = s.cfg.Refresh
	p.Where = s.cfg.Where
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.cfg.Logger.Error("console: render", "template", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}

type errorData struct{ Heading, Text string }

// errorPage renders an error for a person.
func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, u *auth.User, status int, heading, text string) {
	s.render(w, r, status, "error", page{Title: heading, User: u, Data: errorData{heading, text}})
}

// fail logs an internal error and shows a generic page: no error text that
// could carry internal details goes to the browser unless it is meant for
// the user.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	if r.Context().Err() != nil { // the client went away
		s.cfg.Logger.Debug("console: "+what+": request cancelled", "path", r.URL.Path, "err", err)
		return
	}
	s.cfg.Logger.Error("console: "+what, "path", r.URL.Path, "err", err)
	s.errorPage(w, r, nil, http.StatusInternalServerError, "Something went wrong",
		what+" failed; the console's log has the details.")
}

// loginPage shows the token form (tokens mode only).
func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Auth.Mode() != "tokens" {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", page{Title: "Sign in"})
}

// login checks a token and sets the login cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	tk, ok := s.cfg.Auth.(*auth.Tokens)
	if !ok {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	var tok string
	if !s.postForm(w, r, &auth.User{}, 4<<10, func(f *form) { tok = strings.TrimSpace(f.req("token")) }) {
		return
	}
	u, err := tk.Check(tok)
	if err != nil {
		s.cfg.Logger.Warn("console: sign-in refused", "remote", r.RemoteAddr, "err", err)
		s.render(w, r, http.StatusUnauthorized, "login", page{Title: "Sign in", Msg: "That token is not valid."})
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: auth.CookieName, Value: tok, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: s.cfg.SecureCookies || r.TLS != nil, MaxAge: int((12 * time.Hour).Seconds()),
	})
	s.cfg.Logger.Info("console: signed in", "user", u.Name, "role", u.Role.String())
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// albCookies are the session cookies an ALB sets (it shards them).
var albCookies = []string{"AWSELBAuthSessionCookie-0", "AWSELBAuthSessionCookie-1", "AWSELBAuthSessionCookie-2", "AWSELBAuthSessionCookie-3"}

// logout forgets the login cookie (tokens) or the load balancer's session
// cookies (ALB) and says so, with a link to LogoutURL (the identity
// provider's sign-out page) when set: a redirect there from this form
// would be blocked by the policy's form-action 'self'.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	expire := func(name string) {
		http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
			Secure: s.cfg.SecureCookies || r.TLS != nil, SameSite: http.SameSiteStrictMode})
	}
	switch s.cfg.Auth.Mode() {
	case "tokens":
		expire(auth.CookieName)
	case "alb":
		for _, c := range albCookies {
			expire(c)
		}
	default:
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "loggedout", page{Title: "Signed out", User: &auth.User{}, Data: s.cfg.LogoutURL})
}
