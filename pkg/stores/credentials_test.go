package stores_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/endpoint"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

const ambientKey = "AKIAAMBIENTKEY000001"

// s3Recorder is a local S3-compatible endpoint that records the
// Authorization header of every request and answers HeadObject with 200.
type s3Recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newS3Recorder(t *testing.T) *s3Recorder {
	r := &s3Recorder{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.mu.Unlock()
		w.Header().Set("Content-Length", "0")
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *s3Recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

// openRecording opens every store of reg with base credentials ambientKey
// and returns the opened clients by store ID and the errors of the others.
func openRecording(t *testing.T, reg *stores.Registry, base aws.Config, profile func(string) aws.CredentialsProvider) (map[string]*s3.Client, map[string]error) {
	t.Helper()
	o := stores.NewOpener(reg, stores.OpenerConfig{AWS: base, Profile: profile,
		S3: func(_ context.Context, c *s3.Client, s stores.Store) (storage.Provider, error) {
			return &clientProvider{client: c, store: s}, nil
		}})
	clients, errs := map[string]*s3.Client{}, map[string]error{}
	for _, s := range reg.Accounts[0].Stores {
		p, err := o.Open(context.Background(), "acct", s.ID)
		if err != nil {
			errs[s.ID] = err
			continue
		}
		clients[s.ID] = p.(*clientProvider).client
	}
	return clients, errs
}

func head(t *testing.T, c *s3.Client) {
	t.Helper()
	if _, err := c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")}); err != nil {
		t.Fatalf("head: %v", err)
	}
}

func staticBase() aws.Config {
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(ambientKey, "ambient-secret", "")}
}

// TestAmbientCredentialsStayOnAWS: a store whose endpoint is not AWS's and
// that names no credentials does not open, and nothing — least of all the
// process's own credentials — is sent to its endpoint; an endpoint at the
// instance metadata address does not open either. Before, both opened and
// the ambient credentials were sent.
func TestAmbientCredentialsStayOnAWS(t *testing.T) {
	srv := newS3Recorder(t)
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acct", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "bare", Primary: true, Kind: storage.KindS3, Bucket: "b", Endpoint: srv.URL},
		{ID: "metadata", Kind: storage.KindS3, Bucket: "b", Endpoint: "http://169.254.169.254/"},
	}}}}
	clients, errs := openRecording(t, reg, staticBase(), nil)
	for _, c := range clients {
		_, _ = c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("b"), Key: aws.String("k")})
	}
	if err := errs["bare"]; err == nil || !strings.Contains(err.Error(), "is not an AWS endpoint") {
		t.Errorf("custom endpoint without named credentials: %v; want refused", err)
	}
	if err := errs["metadata"]; err == nil || !strings.Contains(err.Error(), "link-local or metadata address") {
		t.Errorf("metadata endpoint: %v; want refused", err)
	}
	for _, a := range srv.got() {
		if strings.Contains(a, ambientKey) {
			t.Errorf("the ambient credentials were sent to %s: %s", srv.URL, a)
		}
	}
	if n := len(srv.got()); n != 0 {
		t.Errorf("%d requests reached the endpoint, want 0", n)
	}
}

// TestStoreCredentialsOwnOnly: a store with a custom endpoint signs with
// the profile it names, never with the ambient credentials; one that sets
// ambientCredentials gets the ambient ones.
func TestStoreCredentialsOwnOnly(t *testing.T) {
	srv := newS3Recorder(t)
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acct", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "profile", Primary: true, Kind: storage.KindS3, Bucket: "b", Prefix: "profile/", Endpoint: srv.URL, Profile: "replica"},
		{ID: "ambient", Kind: storage.KindS3, Bucket: "b", Prefix: "ambient/", Endpoint: srv.URL, AmbientCredentials: true},
	}}}}
	if err := reg.Validate(); err != nil {
		t.Fatal(err)
	}
	profiles := map[string]int{}
	clients, errs := openRecording(t, reg, staticBase(), func(name string) aws.CredentialsProvider {
		profiles[name]++
		return credentials.NewStaticCredentialsProvider("AKIAPROFILEKEY000001", "profile-secret", "")
	})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	head(t, clients["profile"])
	got := srv.got()
	if len(got) != 1 || !strings.Contains(got[0], "Credential=AKIAPROFILEKEY000001/") || strings.Contains(got[0], ambientKey) || profiles["replica"] != 1 {
		t.Fatalf("profile store sent %q (profiles loaded %v); want the profile's key only", got, profiles)
	}
	head(t, clients["ambient"])
	if got = srv.got(); len(got) != 2 || !strings.Contains(got[1], "Credential="+ambientKey+"/") {
		t.Fatalf("ambientCredentials store sent %q; want the ambient key", got)
	}
	// The store's client, as the SDK configured it, still refuses to
	// connect to a metadata address (the check is on the dialled address).
	req, _ := http.NewRequest(http.MethodGet, "http://169.254.169.254/latest/meta-data/", nil)
	if resp, err := clients["profile"].Options().HTTPClient.Do(req); !errors.Is(err, endpoint.ErrForbidden) {
		if err == nil {
			resp.Body.Close()
		}
		t.Errorf("the store client dialled the metadata address: %v", err)
	}
	// No profile loader configured: a clear error, nothing sent.
	if _, errs := openRecording(t, reg, staticBase(), nil); errs["profile"] == nil || !strings.Contains(errs["profile"].Error(), "OpenerConfig.Profile") {
		t.Errorf("profile without a loader: %v", errs["profile"])
	}
}

// Against the emulator: a store with a custom endpoint and a role signs
// with the role's credentials (assumed through STS with the ambient ones,
// which go only to STS), never with the ambient ones.
func TestStoreRoleCredentialsOnCustomEndpoint(t *testing.T) {
	cfg := testenv.AWS(t)
	base, err := cfg.AWS.Credentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	srv := newS3Recorder(t)
	reg := &stores.Registry{Accounts: []stores.Account{{ID: "acct", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "role", Primary: true, Kind: storage.KindS3, Bucket: "b", Endpoint: srv.URL, RoleARN: "arn:aws:iam::123456789012:role/mill-archive"},
	}}}}
	clients, errs := openRecording(t, reg, cfg.AWS, nil)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	head(t, clients["role"])
	got := srv.got()
	if len(got) != 1 || strings.Contains(got[0], "Credential="+base.AccessKeyID+"/") || !strings.Contains(got[0], "Credential=") {
		t.Fatalf("role store sent %q; want the assumed role's key, not %s", got, base.AccessKeyID)
	}
}
