// Package albtest stands in for an AWS Application Load Balancer in tests:
// a key server on loopback publishing public keys by kid, as AWS's regional
// key endpoint does, and a signer making x-amzn-oidc-data tokens the way
// the load balancer does (ES256, the signer, issuer, client and expiry in
// the header, base64url segments with padding).
package albtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ARN is a load balancer ARN for tests.
const ARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/app/mill-console/50dc6c495c0c9188"

// Issuer and Client of the tokens.
const (
	Issuer = "https://idp.example.org"
	Client = "mill-console-client"
)

// KeyServer publishes public keys at /KID.
type KeyServer struct {
	*httptest.Server
	mu      sync.Mutex
	keys    map[string]*ecdsa.PrivateKey
	Fetches atomic.Int64
}

// NewKeyServer starts a key server with one key, kid "kid-1".
func NewKeyServer(t testing.TB) *KeyServer {
	t.Helper()
	ks := &KeyServer{keys: map[string]*ecdsa.PrivateKey{}}
	ks.AddKey(t, "kid-1")
	ks.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks.Fetches.Add(1)
		ks.mu.Lock()
		k := ks.keys[strings.TrimPrefix(r.URL.Path, "/")]
		ks.mu.Unlock()
		if k == nil {
			http.NotFound(w, r)
			return
		}
		der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		_ = pem.Encode(w, &pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}))
	t.Cleanup(ks.Close)
	return ks
}

// AddKey adds a key under kid.
func (ks *KeyServer) AddKey(t testing.TB, kid string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ks.mu.Lock()
	ks.keys[kid] = k
	ks.mu.Unlock()
}

// Key returns the private key of kid.
func (ks *KeyServer) Key(kid string) *ecdsa.PrivateKey {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	return ks.keys[kid]
}

// Token describes a token to sign; zero fields get defaults (kid-1, ARN,
// Issuer, Client, an expiry 2 minutes from now, ES256).
type Token struct {
	Kid, Signer, Issuer, Client, Alg string
	Exp                              time.Time
	Claims                           map[string]any
	// Key signs; default the key server's key of Kid.
	Key *ecdsa.PrivateKey
	// NoPadding writes the segments without padding (as a standard JWT).
	NoPadding bool
}

// Sign makes the x-amzn-oidc-data value of tok.
func (ks *KeyServer) Sign(t testing.TB, tok Token) string {
	t.Helper()
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	tok.Kid = def(tok.Kid, "kid-1")
	hdr := map[string]any{
		"typ": "JWT", "kid": tok.Kid, "alg": def(tok.Alg, "ES256"),
		"iss": def(tok.Issuer, Issuer), "client": def(tok.Client, Client), "signer": def(tok.Signer, ARN),
	}
	if tok.Exp.IsZero() {
		tok.Exp = time.Now().Add(2 * time.Minute)
	}
	hdr["exp"] = tok.Exp.Unix()
	enc := base64.URLEncoding
	if tok.NoPadding {
		enc = base64.RawURLEncoding
	}
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return enc.EncodeToString(b)
	}
	signing := seg(hdr) + "." + seg(tok.Claims)
	key := tok.Key
	if key == nil {
		key = ks.Key(tok.Kid)
	}
	if key == nil {
		t.Fatalf("albtest: no key for kid %s", tok.Kid)
	}
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, key, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + enc.EncodeToString(sig)
}
