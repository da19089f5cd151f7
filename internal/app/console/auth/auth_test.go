package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth/albtest"
)

func TestRoles(t *testing.T) {
	for _, r := range Roles {
		got, err := ParseRole(strings.ToUpper(r.String()))
		if err != nil || got != r {
			t.Errorf("ParseRole(%s) = %v, %v", r, got, err)
		}
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error("ParseRole(root) succeeded")
	}
	if !RoleAdmin.Can(RoleOperator) || !RoleOperator.Can(RoleViewer) || RoleViewer.Can(RoleOperator) || RoleOperator.Can(RoleAdmin) || RoleNone.Can(RoleNone) {
		t.Error("role order wrong")
	}
}

func writeTokens(t *testing.T, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

func line(t *testing.T, user string, role Role, tok string) string {
	t.Helper()
	l, err := TokenLine(user, role, tok)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	admin, viewer := NewToken(), NewToken()
	if !strings.HasPrefix(admin, TokenPrefix) || admin == viewer || len(admin) < 40 {
		t.Fatalf("tokens %q %q", admin, viewer)
	}
	writeTokens(t, path, "# console users", line(t, "ana", RoleAdmin, admin), "", line(t, "bo", RoleViewer, viewer))
	data, _ := os.ReadFile(path)
	if strings.Contains(string(data), admin) {
		t.Fatal("the tokens file holds a token itself")
	}
	tk, err := NewTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	tk.now = func() time.Time { return now }

	req := func(set func(*http.Request)) (*User, error) {
		r := httptest.NewRequest("GET", "/", nil)
		set(r)
		return tk.Authenticate(r)
	}
	u, err := req(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+admin) })
	if err != nil || u.Name != "ana" || u.Role != RoleAdmin || u.Mode != "tokens" {
		t.Fatalf("bearer admin: %+v, %v", u, err)
	}
	u, err = req(func(r *http.Request) { r.AddCookie(&http.Cookie{Name: CookieName, Value: viewer}) })
	if err != nil || u.Name != "bo" || u.Role != RoleViewer {
		t.Fatalf("cookie viewer: %+v, %v", u, err)
	}
	if _, err := req(func(*http.Request) {}); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("no credentials: %v", err)
	}
	for name, set := range map[string]func(*http.Request){
		"unknown":   func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+NewToken()) },
		"basic":     func(r *http.Request) { r.Header.Set("Authorization", "Basic YTpi") },
		"the hash":  func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+HashToken(admin)) },
		"oversized": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+admin+strings.Repeat("x", 300)) },
	} {
		if _, err := req(set); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", name, err)
		}
	}

	// Removing a line revokes its token once the file is looked at again.
	writeTokens(t, path, line(t, "ana", RoleAdmin, admin))
	if err := os.Chtimes(path, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(reloadEvery)
	if _, err := req(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+viewer) }); !errors.Is(err, ErrRefused) {
		t.Errorf("revoked token: %v", err)
	}
	// A file turned invalid keeps the last good list, and says so.
	writeTokens(t, path, "ana admin "+admin)
	if err := os.Chtimes(path, now, now.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(reloadEvery)
	if u, err := req(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+admin) }); err != nil || u.Name != "ana" {
		t.Errorf("after a bad reload: %+v, %v", u, err)
	}
	if tk.Err() == nil || !strings.Contains(tk.Err().Error(), "never the token itself") {
		t.Errorf("Err() = %v", tk.Err())
	}
}

func TestTokensFileProblems(t *testing.T) {
	dir := t.TempDir()
	tok := NewToken()
	for name, tc := range map[string]struct {
		content string
		mode    os.FileMode
		want    string
	}{
		"empty":          {"# nobody\n", 0o600, "holds no token"},
		"plain token":    {"ana admin " + tok + "\n", 0o600, "tokens:1: the token hash"},
		"bad role":       {"ana root " + HashToken(tok) + "\n", 0o600, `tokens:1: auth: unknown role "root"`},
		"fields":         {"ana admin\n", 0o600, "tokens:1: want USER ROLE"},
		"twice":          {"ana admin " + HashToken(tok) + "\nbo viewer " + HashToken(tok) + "\n", 0o600, "tokens:2: the same token as line 1"},
		"world-writable": {"ana admin " + HashToken(tok) + "\n", 0o666, "writable by everyone"},
	} {
		path := filepath.Join(dir, "tokens")
		if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		if _, err := NewTokens(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	if _, err := TokenLine("ana smith", RoleAdmin, tok); err == nil {
		t.Error("TokenLine accepted a user name with a space")
	}
}

func newALB(t *testing.T, ks *albtest.KeyServer, mod func(*ALBConfig)) *ALB {
	t.Helper()
	cfg := ALBConfig{
		ARN: albtest.ARN, KeyURL: ks.URL, Issuer: albtest.Issuer, ClientID: albtest.Client,
		Roles: map[Role][]string{RoleAdmin: {"mill-admins"}, RoleOperator: {"mill-ops"}, RoleViewer: {"staff"}},
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := NewALB(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func albRequest(v string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	if v != "" {
		r.Header.Set(ALBHeader, v)
	}
	return r
}

func TestALB(t *testing.T) {
	ks := albtest.NewKeyServer(t)
	a := newALB(t, ks, nil)
	claims := map[string]any{"sub": "u-1", "email": "ana@example.org", "groups": []string{"staff", "mill-admins"}}

	u, err := a.Authenticate(albRequest(ks.Sign(t, albtest.Token{Claims: claims})))
	if err != nil || u.Name != "ana@example.org" || u.Role != RoleAdmin || u.Mode != "alb" {
		t.Fatalf("valid token: %+v, %v", u, err)
	}
	// Without padding (a standard JWT) too; the key is cached.
	u, err = a.Authenticate(albRequest(ks.Sign(t, albtest.Token{NoPadding: true, Claims: map[string]any{"sub": "u-2", "groups": "staff,mill-ops"}})))
	if err != nil || u.Name != "u-2" || u.Role != RoleOperator {
		t.Fatalf("unpadded token: %+v, %v", u, err)
	}
	if n := ks.Fetches.Load(); n != 1 {
		t.Errorf("%d key fetches, want 1 (cached)", n)
	}
	if _, err := a.Authenticate(albRequest("")); !errors.Is(err, ErrNoCredentials) {
		t.Errorf("no header: %v", err)
	}

	other := albtest.NewKeyServer(t)
	for name, tc := range map[string]struct {
		tok  string
		want string
	}{
		"another signer":   {ks.Sign(t, albtest.Token{Signer: strings.Replace(albtest.ARN, "mill-console", "evil", 1), Claims: claims}), "is not the load balancer"},
		"expired":          {ks.Sign(t, albtest.Token{Exp: time.Now().Add(-time.Minute), Claims: claims}), "expired"},
		"another issuer":   {ks.Sign(t, albtest.Token{Issuer: "https://evil.example", Claims: claims}), "issuer"},
		"another client":   {ks.Sign(t, albtest.Token{Client: "other", Claims: claims}), "client"},
		"another key":      {ks.Sign(t, albtest.Token{Key: other.Key("kid-1"), Claims: claims}), "signature is invalid"},
		"HS256":            {ks.Sign(t, albtest.Token{Alg: "HS256", Claims: claims}), "signing method HS256 is invalid"},
		"no role":          {ks.Sign(t, albtest.Token{Claims: map[string]any{"email": "eve@example.org", "groups": []string{"guests"}}}), "no role"},
		"no user":          {ks.Sign(t, albtest.Token{Claims: map[string]any{"groups": []string{"staff"}}}), "names no user"},
		"garbage":          {"a.b.c", "malformed"},
		"path in kid":      {ks.Sign(t, albtest.Token{Kid: "../../etc", Key: ks.Key("kid-1"), Claims: claims}), "malformed kid"},
		"oversized header": {strings.Repeat("a", maxALBHeader+1), "over"},
	} {
		before := ks.Fetches.Load()
		_, err := a.Authenticate(albRequest(tc.tok))
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want refused: %q", name, err, tc.want)
		}
		if ks.Fetches.Load() != before {
			t.Errorf("%s: the key server was asked", name)
		}
	}

	// A kid the key server does not know: one fetch, then not asked again
	// for a while.
	tok := ks.Sign(t, albtest.Token{Kid: "kid-unknown", Key: ks.Key("kid-1"), Claims: claims})
	for range 3 {
		if _, err := a.Authenticate(albRequest(tok)); !errors.Is(err, ErrRefused) {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if n := ks.Fetches.Load(); n != 2 {
		t.Errorf("%d key fetches after three tokens of an unknown kid, want 2", n)
	}
	// A rotated key is fetched by its new kid.
	ks.AddKey(t, "kid-2")
	if u, err := a.Authenticate(albRequest(ks.Sign(t, albtest.Token{Kid: "kid-2", Claims: claims}))); err != nil || u.Role != RoleAdmin {
		t.Errorf("rotated key: %+v, %v", u, err)
	}
}

func TestALBKeyFetchLimit(t *testing.T) {
	ks := albtest.NewKeyServer(t)
	a := newALB(t, ks, nil)
	for i := range keyFetchesPerMinute + 5 {
		kid := "forged-" + strings.Repeat("x", i+1)
		ks.AddKey(t, kid)
		_, _ = a.Authenticate(albRequest(ks.Sign(t, albtest.Token{Kid: kid, Claims: map[string]any{"sub": "x", "groups": "staff"}})))
	}
	if n := ks.Fetches.Load(); n != keyFetchesPerMinute {
		t.Errorf("%d key fetches in a minute, want at most %d", n, keyFetchesPerMinute)
	}
}

func TestALBConfig(t *testing.T) {
	ks := albtest.NewKeyServer(t)
	a := newALB(t, ks, func(c *ALBConfig) {
		c.KeyURL = DefaultALBKeyURL
		c.Roles = map[Role][]string{RoleViewer: {"*"}, RoleAdmin: {"ana@example.org"}}
		c.RoleClaim = "email"
	})
	if a.keyURL != "https://public-keys.auth.elb.eu-west-1.amazonaws.com/" {
		t.Errorf("key URL %s", a.keyURL)
	}
	if r := a.role(claimValues("ana@example.org")); r != RoleAdmin {
		t.Errorf("role by e-mail = %v", r)
	}
	if r := a.role(nil); r != RoleViewer {
		t.Errorf("role by * = %v", r)
	}
	err := ALBConfig{ARN: "arn:aws:s3:::bucket", KeyURL: "ftp://x"}.Validate()
	for _, want := range []string{"not an Application Load Balancer ARN", "issuer is required", "want an http(s) URL", "nobody could use"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want %q", err, want)
		}
	}
}
