package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/sync/singleflight"

	"github.com/millfleet/mill/internal/base/defaults"
)

// ALBHeader carries the user's claims, signed by the load balancer.
const ALBHeader = "X-Amzn-Oidc-Data"

// DefaultALBKeyURL is where AWS publishes a load balancer's signing keys:
// {region} is replaced by the region of the load balancer's ARN and the
// key id is appended.
const DefaultALBKeyURL = "https://public-keys.auth.elb.{region}.amazonaws.com/"

// Limits on what a request can make the console do.
const (
	maxALBHeader = 16 << 10 // bytes of x-amzn-oidc-data
	maxKeyBody   = 8 << 10  // bytes of a public key response
	maxKeys      = 32       // keys cached (the load balancer rotates a few)
	// A kid whose key could not be fetched is not asked for again for a
	// while, and at most keyFetchesPerMinute fetches happen a minute, so
	// forged tokens cannot make the console hammer the key endpoint.
	keyRetryAfter       = time.Minute
	keyFetchesPerMinute = 10
)

// kidPattern is the shape of a key id (AWS uses UUIDs); anything else is
// refused before it reaches a URL.
var kidPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)

// ALBConfig configures the ALB mode.
type ALBConfig struct {
	// ARN of the load balancer (required): a token's signer must be it.
	ARN string
	// KeyURL is the public key endpoint (default DefaultALBKeyURL); tests
	// point it at a local key server.
	KeyURL string
	// Issuer is the OIDC issuer of the listener (required): a token's iss
	// must be it.
	Issuer string
	// ClientID, when set, must be the token's client.
	ClientID string
	// UserClaim names the user (default "email"; "sub" when the claim is
	// missing).
	UserClaim string
	// RoleClaim holds the values Roles maps (default "groups"): a JSON
	// string array, or a string of comma- or space-separated values.
	RoleClaim string
	// Roles maps claim values to roles; a user gets the highest role any
	// of their values maps to. The value "*" matches every user the load
	// balancer authenticated. A user matching nothing is refused.
	Roles map[Role][]string
	// Leeway tolerated on the expiry (default 30 s).
	Leeway time.Duration
	// HTTPClient fetches keys (default: a 10 s timeout).
	HTTPClient *http.Client
	// Now tells the time (default time.Now).
	Now func() time.Time
}

// Validate reports every problem.
func (c ALBConfig) Validate() error {
	var errs []error
	if _, err := arnRegion(c.ARN); err != nil {
		errs = append(errs, err)
	}
	if c.Issuer == "" {
		errs = append(errs, errors.New("auth: the OIDC issuer is required (--oidc-issuer)"))
	}
	if c.KeyURL != "" {
		if u, err := url.Parse(strings.ReplaceAll(c.KeyURL, "{region}", "r")); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("auth: key URL %q: want an http(s) URL", c.KeyURL))
		}
	}
	n := 0
	for r, vs := range c.Roles {
		if r == RoleNone {
			errs = append(errs, errors.New("auth: role none cannot be mapped"))
		}
		n += len(vs)
	}
	if n == 0 {
		errs = append(errs, errors.New("auth: no claim value maps to a role (--oidc-admins, --oidc-operators, --oidc-viewers): nobody could use the console"))
	}
	return errors.Join(errs...)
}

// arnRegion returns the region of a load balancer ARN
// (arn:PARTITION:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/app/…).
func arnRegion(arn string) (string, error) {
	p := strings.SplitN(arn, ":", 6)
	if len(p) != 6 || p[0] != "arn" || p[2] != "elasticloadbalancing" || p[3] == "" || !strings.HasPrefix(p[5], "loadbalancer/app/") {
		return "", fmt.Errorf("auth: %q is not an Application Load Balancer ARN (arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/app/NAME/ID)", arn)
	}
	return p[3], nil
}

// ALB is the ALB mode.
type ALB struct {
	cfg    ALBConfig
	keyURL string // with the region filled in

	flight singleflight.Group
	mu     sync.Mutex
	keys   map[string]*ecdsa.PublicKey
	failed map[string]time.Time // kid → when its fetch failed
	recent []time.Time          // fetch times of the last minute
}

var _ Authenticator = (*ALB)(nil)

// defaultALBConfig holds the values NewALB gives an ALBConfig's empty
// fields (and a negative Leeway).
var defaultALBConfig = ALBConfig{KeyURL: DefaultALBKeyURL, UserClaim: "email", RoleClaim: "groups", Leeway: 30 * time.Second, Now: time.Now}

// NewALB returns the ALB mode.
func NewALB(cfg ALBConfig) (*ALB, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	region, _ := arnRegion(cfg.ARN)
	defaults.FillNonPositive(&cfg, defaultALBConfig)
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	keyURL := strings.ReplaceAll(cfg.KeyURL, "{region}", region)
	if !strings.HasSuffix(keyURL, "/") {
		keyURL += "/"
	}
	return &ALB{cfg: cfg, keyURL: keyURL, keys: map[string]*ecdsa.PublicKey{}, failed: map[string]time.Time{}}, nil
}

// Mode implements Authenticator.
func (a *ALB) Mode() string { return "alb" }

// Authenticate implements Authenticator.
func (a *ALB) Authenticate(r *http.Request) (*User, error) {
	raw := r.Header.Get(ALBHeader)
	if raw == "" {
		return nil, ErrNoCredentials
	}
	if len(raw) > maxALBHeader {
		return nil, fmt.Errorf("%w: %s is over %d bytes", ErrRefused, ALBHeader, maxALBHeader)
	}
	claims, err := a.Verify(r.Context(), raw)
	if err != nil {
		return nil, err
	}
	name, _ := claims[a.cfg.UserClaim].(string)
	if name == "" {
		name, _ = claims["sub"].(string)
	}
	if name == "" {
		return nil, fmt.Errorf("%w: the token names no user (%s or sub)", ErrRefused, a.cfg.UserClaim)
	}
	role := a.role(claimValues(claims[a.cfg.RoleClaim]))
	if role == RoleNone {
		return nil, fmt.Errorf("%w: %s: no role for the values of claim %q", ErrRefused, name, a.cfg.RoleClaim)
	}
	return &User{Name: name, Role: role, Mode: a.Mode()}, nil
}

// Verify checks a token the load balancer signed and returns its claims:
// the signature (ES256, with the key of the token's kid), the signer, the
// issuer, the client and the expiry, which the load balancer puts in the
// token's header. Its segments are base64url with padding, as the load
// balancer writes them (and signs them).
func (a *ALB) Verify(ctx context.Context, raw string) (jwt.MapClaims, error) {
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
		if signer, _ := t.Header["signer"].(string); signer != a.cfg.ARN {
			return nil, fmt.Errorf("signer %q is not the load balancer %s", signer, a.cfg.ARN)
		}
		kid, _ := t.Header["kid"].(string)
		if !kidPattern.MatchString(kid) {
			return nil, fmt.Errorf("malformed kid %q", kid)
		}
		return a.key(ctx, kid)
	},
		jwt.WithValidMethods([]string{jwt.SigningMethodES256.Alg()}),
		jwt.WithPaddingAllowed(),
		// The load balancer's expiry is in the header, checked below; the
		// payload holds the identity provider's claims as they came.
		jwt.WithoutClaimsValidation(),
	)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRefused, ALBHeader, err)
	}
	if iss, _ := tok.Header["iss"].(string); iss != a.cfg.Issuer {
		return nil, fmt.Errorf("%w: issuer %q is not %q", ErrRefused, iss, a.cfg.Issuer)
	}
	if a.cfg.ClientID != "" {
		if c, _ := tok.Header["client"].(string); c != a.cfg.ClientID {
			return nil, fmt.Errorf("%w: client %q is not %q", ErrRefused, c, a.cfg.ClientID)
		}
	}
	exp, ok := tok.Header["exp"].(float64)
	if !ok {
		return nil, fmt.Errorf("%w: the token has no expiry", ErrRefused)
	}
	if now := a.cfg.Now(); now.After(time.Unix(int64(exp), 0).Add(a.cfg.Leeway)) {
		return nil, fmt.Errorf("%w: the token expired at %s", ErrRefused, time.Unix(int64(exp), 0).UTC().Format(time.RFC3339))
	}
	return claims, nil
}

// key returns the public key of kid: cached, or fetched once however many
// requests ask at the same time.
func (a *ALB) key(ctx context.Context, kid string) (*ecdsa.PublicKey, error) {
	a.mu.Lock()
	if k, ok := a.keys[kid]; ok {
		a.mu.Unlock()
		return k, nil
	}
	now := a.cfg.Now()
	if t, ok := a.failed[kid]; ok && now.Sub(t) < keyRetryAfter {
		a.mu.Unlock()
		return nil, fmt.Errorf("the key of kid %s could not be fetched recently", kid)
	}
	a.mu.Unlock()
	v, err, _ := a.flight.Do(kid, func() (any, error) {
		a.mu.Lock()
		a.recent = slices.DeleteFunc(a.recent, func(t time.Time) bool { return now.Sub(t) >= time.Minute })
		if len(a.recent) >= keyFetchesPerMinute {
			a.mu.Unlock()
			return nil, fmt.Errorf("more than %d key fetches in a minute; kid %s not fetched", keyFetchesPerMinute, kid)
		}
		a.recent = append(a.recent, now)
		a.mu.Unlock()
		k, err := a.fetch(context.WithoutCancel(ctx), kid)
		a.mu.Lock()
		defer a.mu.Unlock()
		if err != nil {
			a.failed[kid] = now
			return nil, err
		}
		if len(a.keys) >= maxKeys {
			for old := range a.keys { // evict one: keys do not change, a re-fetch is cheap
				delete(a.keys, old)
				break
			}
		}
		a.keys[kid] = k
		delete(a.failed, kid)
		return k, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*ecdsa.PublicKey), nil
}

func (a *ALB) fetch(ctx context.Context, kid string) (*ecdsa.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	u := a.keyURL + url.PathEscape(kid)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch key %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxKeyBody))
	if err != nil {
		return nil, fmt.Errorf("fetch key %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch key %s: %s", u, resp.Status)
	}
	block, _ := pem.Decode(body)
	if block == nil || block.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("key %s: not a PEM public key", u)
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", u, err)
	}
	k, ok := pub.(*ecdsa.PublicKey)
	if !ok || k.Curve != elliptic.P256() {
		return nil, fmt.Errorf("key %s: not an ECDSA P-256 key", u)
	}
	return k, nil
}

// role returns the highest role any of vals maps to.
func (a *ALB) role(vals []string) Role {
	best := RoleNone
	for r, want := range a.cfg.Roles {
		if r <= best {
			continue
		}
		for _, w := range want {
			if w == "*" || slices.Contains(vals, w) {
				best = r
				break
			}
		}
	}
	return best
}

// claimValues reads a claim as a list of strings.
func claimValues(v any) []string {
	switch x := v.(type) {
	case string:
		return strings.FieldsFunc(x, func(r rune) bool { return r == ',' || r == ' ' })
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
