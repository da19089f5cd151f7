package gcsstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/auth/httptransport"
	"google.golang.org/api/option"
	raw "google.golang.org/api/storage/v1"

	"github.com/millfleet/mill/pkg/endpoint"
)

// scope is the OAuth scope of a store: read and write objects.
const scope = "https://www.googleapis.com/auth/devstorage.read_write"

// ClientConfig says how a store reaches GCS (the registry's gcs store
// fields; see pkg/stores).
type ClientConfig struct {
	// Endpoint of an emulator or another GCS JSON API service; "" is
	// Google's. It obeys pkg/endpoint's rules: https, plain http only to
	// a loopback host or with AllowInsecureEndpoint.
	Endpoint              string
	AllowInsecureEndpoint bool
	// ServiceAccountFile is the absolute path of a service-account key
	// file. "" uses Application Default Credentials: workload identity on
	// GKE, the metadata server on Compute Engine, or the file
	// GOOGLE_APPLICATION_CREDENTIALS names.
	ServiceAccountFile string
	// Anonymous sends no credentials (an emulator).
	Anonymous bool
	// Resolver resolves host names for the connection guard (nil: the
	// default resolver).
	Resolver *net.Resolver
}

// Client is a connection to GCS's JSON API (Google's generated REST
// client, google.golang.org/api/storage/v1), shared by the stores opened
// on it. It is safe for concurrent use.
type Client struct {
	svc *raw.Service
	hc  *http.Client
	// retry is the backoff of the transport's retries and of the stores'
	// retried writes (a test sets its clock).
	retry *backoff
}

// Close releases the client's idle connections.
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// NewClient returns a GCS client for cc. Its connections never reach a
// link-local or metadata address (endpoint.HTTPClient's dialer), so a
// hostile endpoint cannot point it at a metadata server.
func NewClient(ctx context.Context, cc ClientConfig) (*Client, error) {
	if cc.Endpoint != "" {
		if err := endpoint.Check(cc.Endpoint, cc.AllowInsecureEndpoint); err != nil {
			return nil, fmt.Errorf("gcsstore: %w", err)
		}
	} else if cc.Anonymous {
		return nil, errors.New("gcsstore: anonymous access is for an emulator's endpoint, not Google's")
	}
	if cc.ServiceAccountFile != "" && (cc.Anonymous || !filepath.IsAbs(cc.ServiceAccountFile)) {
		return nil, fmt.Errorf("gcsstore: service account file %q: want an absolute path, and not with anonymous access", cc.ServiceAccountFile)
	}
	retry := defaultBackoff()
	var base http.RoundTripper = retrying{next: endpoint.HTTPClient(cc.Resolver).GetTransport(), b: retry}
	hc := &http.Client{Transport: base}
	if !cc.Anonymous {
		opts := &credentials.DetectOptions{Scopes: []string{scope}}
		var creds *auth.Credentials
		var err error
		if cc.ServiceAccountFile != "" {
			// A service-account key only: the file is the operator's,
			// and no other credential type it could hold is accepted.
			creds, err = credentials.NewCredentialsFromFile(credentials.ServiceAccount, cc.ServiceAccountFile, opts)
		} else {
			creds, err = credentials.DetectDefault(opts)
		}
		if err != nil {
			return nil, fmt.Errorf("gcsstore: credentials: %w", err)
		}
		if hc, err = httptransport.NewClient(&httptransport.Options{Credentials: creds, BaseRoundTripper: base}); err != nil {
			return nil, fmt.Errorf("gcsstore: %w", err)
		}
	}
	opts := []option.ClientOption{option.WithHTTPClient(hc)}
	if cc.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(cc.Endpoint, "/")+"/storage/v1/"))
	}
	svc, err := raw.NewService(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("gcsstore: %w", err)
	}
	return &Client{svc: svc, hc: hc, retry: retry}, nil
}
