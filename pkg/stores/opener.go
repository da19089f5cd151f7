package stores

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/millfleet/mill/pkg/endpoint"
	"github.com/millfleet/mill/pkg/storage"
)

// OpenS3Func opens the provider of an s3 store given a client configured
// for it (region, endpoint, credentials).
type OpenS3Func func(ctx context.Context, client *s3.Client, s Store) (storage.Provider, error)

// OpenFSFunc opens the provider of an fs store.
type OpenFSFunc func(ctx context.Context, s Store) (storage.Provider, error)

// OpenerConfig tells an Opener how to reach stores.
type OpenerConfig struct {
	// AWS is the base SDK configuration (default chain credentials and
	// region). Required for s3 stores.
	AWS aws.Config
	// PathStyle makes S3 clients use path-style addressing (set it when
	// the base configuration points at an emulator). A store with its own
	// endpoint always uses path style.
	PathStyle bool
	// S3 opens an s3 store on a configured client (for example with
	// s3store.New). Required for s3 stores.
	S3 OpenS3Func
	// FS opens an fs store (for example with fsstore.New). Required for fs
	// stores.
	FS OpenFSFunc
	// GCS and Azure open gcs and azure stores (cloud.go; for example with
	// gcsstore and azstore, reading an azure store's connection string
	// from the environment). Required for stores of those kinds.
	GCS, Azure OpenFSFunc
	// S3Options are applied to every S3 client after the store's settings.
	S3Options []func(*s3.Options)
	// STSOptions are applied to the STS client used to assume roles.
	STSOptions []func(*sts.Options)
	// Profile returns the credentials of a named profile of the shared
	// AWS config and credentials files (awsconfig.ProfileCredentials).
	// Required for stores that name a profile.
	Profile func(name string) aws.CredentialsProvider
}

// Opener opens the storage provider of a registered store, once: providers
// are cached per (account, store), and assumed-role and profile
// credentials per role ARN and profile name (refreshed by the SDK's
// credentials cache before they expire). Safe for concurrent use.
//
// Each s3 store is reached with its own credentials: the role it names
// (assumed with the base configuration's credentials), the profile it
// names, or else the base configuration's (the default chain's) — and
// those only when the store's endpoint is AWS's (none set, or an AWS one)
// or the store sets AmbientCredentials. Its endpoint is checked by
// pkg/endpoint's rules, and its client's connections never reach a
// link-local or metadata address (endpoint.HTTPClient). An fs store whose
// root, resolved through symbolic links on this machine, is, lies inside
// or contains another fs store's does not open either (Parse compares the
// roots as written), nor one whose listSpillDir is missing, not a
// directory, or resolves to an fs store's root or inside one
// (spilldir.go). A store that breaks a rule does not open.
type Opener struct {
	reg  *Registry
	cfg  OpenerConfig
	http aws.HTTPClient

	mu    sync.Mutex
	provs map[[2]string]storage.Provider
	creds map[string]*aws.CredentialsCache
	sts   *sts.Client
}

// NewOpener returns an opener for the stores of reg.
func NewOpener(reg *Registry, cfg OpenerConfig) *Opener {
	return &Opener{reg: reg, cfg: cfg, http: endpoint.HTTPClient(nil),
		provs: map[[2]string]storage.Provider{}, creds: map[string]*aws.CredentialsCache{}}
}

// Registry returns the registry the opener serves.
func (o *Opener) Registry() *Registry { return o.reg }

// RegistryOpener opens the storage providers of registered stores and
// exposes the registry: what a processor that visits the stores of an
// account needs. *Opener implements it.
type RegistryOpener interface {
	storage.Opener
	Registry() *Registry
}

var _ RegistryOpener = (*Opener)(nil)

// Open returns the provider of account's store storeID. Errors wrap
// ErrUnknownAccount or ErrUnknownStore for stores that are not registered.
func (o *Opener) Open(ctx context.Context, account, storeID string) (storage.Provider, error) {
	s, err := o.reg.Store(account, storeID)
	if err != nil {
		return nil, err
	}
	key := [2]string{account, storeID}
	o.mu.Lock()
	defer o.mu.Unlock()
	if p, ok := o.provs[key]; ok {
		return p, nil
	}
	var p storage.Provider
	switch s.Kind {
	case storage.KindS3:
		if o.cfg.S3 == nil {
			return nil, errors.New("stores: no s3 provider constructor configured (OpenerConfig.S3)")
		}
		var c *s3.Client
		if c, err = o.s3Client(account, *s); err == nil {
			p, err = o.cfg.S3(ctx, c, *s)
		}
	case storage.KindFS:
		if o.cfg.FS == nil {
			return nil, errors.New("stores: no fs provider constructor configured (OpenerConfig.FS)")
		}
		if err = fsAliasProblem(o.reg, account, *s); err == nil {
			err = spillDirOpenProblem(o.reg, *s)
		}
		if err == nil {
			p, err = o.cfg.FS(ctx, *s)
		}
	case storage.KindGCS, storage.KindAzure:
		p, err = o.openCloud(ctx, *s)
	default:
		err = fmt.Errorf("unknown kind %q", s.Kind)
	}
	if err != nil {
		return nil, fmt.Errorf("stores: open store %q of account %q: %w", storeID, account, err)
	}
	o.provs[key] = p
	return p, nil
}

// S3Client returns the S3 client for an s3 store: the base configuration
// with the store's region and endpoint and the store's credentials (see
// Opener).
func (o *Opener) S3Client(account, storeID string) (*s3.Client, error) {
	s, err := o.reg.Store(account, storeID)
	if err != nil {
		return nil, err
	}
	if s.Kind != storage.KindS3 {
		return nil, fmt.Errorf("stores: store %q of account %q is a %s store, not s3", storeID, account, s.Kind)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.s3Client(account, *s)
}

// s3Client builds a client for s; o.mu is held.
func (o *Opener) s3Client(account string, s Store) (*s3.Client, error) {
	if problems := s.accessProblems(); len(problems) > 0 {
		return nil, fmt.Errorf("stores: store %q of account %q: %s", s.ID, account, strings.Join(problems, "; "))
	}
	var creds aws.CredentialsProvider
	switch {
	case s.RoleARN != "":
		creds = o.roleCredentials(account, s)
	case s.Profile != "":
		if o.cfg.Profile == nil {
			return nil, fmt.Errorf("stores: store %q of account %q names profile %q, but no profile loader is configured (OpenerConfig.Profile)", s.ID, account, s.Profile)
		}
		creds = o.profileCredentials(s.Profile)
	}
	opts := []func(*s3.Options){func(so *s3.Options) {
		so.UsePathStyle = o.cfg.PathStyle
		// Mill verifies content MD5s itself; the SDK's plain-text notice
		// that a response carried no checksum would only break JSON logs.
		so.DisableLogOutputChecksumValidationSkipped = true
		so.HTTPClient = o.http
		if s.Region != "" {
			so.Region = s.Region
		}
		if s.Endpoint != "" {
			so.BaseEndpoint = aws.String(s.Endpoint)
			so.UsePathStyle = true
		}
		if creds != nil {
			so.Credentials = creds
		}
	}}
	opts = append(opts, o.cfg.S3Options...)
	return s3.NewFromConfig(o.cfg.AWS, opts...), nil
}

// profileCredentials returns the cached credentials of a named profile;
// o.mu is held.
func (o *Opener) profileCredentials(name string) *aws.CredentialsCache {
	key := "profile:" + name
	if c, ok := o.creds[key]; ok {
		return c
	}
	c := aws.NewCredentialsCache(o.cfg.Profile(name))
	o.creds[key] = c
	return c
}

// roleCredentials returns the cached credentials of s.RoleARN; o.mu is held.
func (o *Opener) roleCredentials(account string, s Store) *aws.CredentialsCache {
	if c, ok := o.creds["role:"+s.RoleARN]; ok {
		return c
	}
	if o.sts == nil {
		o.sts = sts.NewFromConfig(o.cfg.AWS, o.cfg.STSOptions...)
	}
	session := sessionName("mill-" + account + "-" + s.ID)
	c := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(o.sts, s.RoleARN, func(ao *stscreds.AssumeRoleOptions) {
		ao.RoleSessionName = session
	}))
	o.creds["role:"+s.RoleARN] = c
	return c
}

// sessionName makes s a valid STS role session name: [\w+=,.@-], 2 to 64
// characters.
func sessionName(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '+' || c == '=' || c == ',' || c == '.' || c == '@' || c == '-'
		if !ok {
			b[i] = '-'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}
