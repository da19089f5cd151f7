package wiring

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/awsconfig"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"github.com/millfleet/mill/pkg/configstore/s3configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/fsstore"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores"
)

// ConfigSource says where accounts.json and the duplication policies live:
// a local directory, or a bucket (the config bucket) under a key prefix.
type ConfigSource struct {
	Dir            string
	Bucket, Prefix string
}

// String names the source for messages.
func (c ConfigSource) String() string {
	if c.Dir != "" {
		return c.Dir
	}
	return "s3://" + c.Bucket + "/" + c.Prefix
}

// Registry loads accounts.json (LoadRegistry), its error naming the source.
func (c ConfigSource) Registry(ctx context.Context, s3c *s3.Client) (*stores.Registry, error) {
	reg, err := c.LoadRegistry(ctx, s3c)
	if err != nil {
		return nil, fmt.Errorf("store registry (%s): %w", c, err)
	}
	return reg, nil
}

// LoadRegistry loads accounts.json; s3c is used when the source is a
// bucket. Its error is the loader's own (a file's problems joined, each
// at file:line:col), for commands that list them.
func (c ConfigSource) LoadRegistry(ctx context.Context, s3c *s3.Client) (*stores.Registry, error) {
	if c.Dir != "" {
		return stores.LoadFile(filepath.Join(c.Dir, stores.FileName))
	}
	return stores.LoadS3(ctx, s3c, c.Bucket, c.Prefix+stores.FileName)
}

// Policies returns the duplication policy repository of the source.
func (c ConfigSource) Policies(s3c *s3.Client) policy.Repository {
	if c.Dir != "" {
		return policy.NewDir(c.Dir)
	}
	return policy.NewS3(s3c, c.Bucket, c.Prefix)
}

// Files is the versioned store of the source's files (conditional writes,
// history), refusing files over maxSize (0: the store's default); s3c is
// used when the source is a bucket.
func (c ConfigSource) Files(s3c *s3.Client, maxSize int64) (configstore.Store, error) {
	if c.Dir != "" {
		return fsconfigstore.New(c.Dir, maxSize)
	}
	return s3configstore.New(s3c, c.Bucket, c.Prefix, maxSize), nil
}

// NewOpener opens the stores of reg: fs stores with fsstore (openFS),
// gcs and azure stores with gcsstore and azstore (clouds.go), s3 stores
// with s3store on clients built from base (nil when no store is s3), each with
// its own credentials — the role or named profile it names (profiles are
// read from the shared AWS config files), else base's, which go only to
// AWS endpoints unless the store sets ambientCredentials (see
// stores.Opener). S3 stores reached the same way (stores.Store.Access)
// share a client, so copies between them are server-side. s3opts apply
// to every store's S3 client (awsconfig.Config.LimitS3: the per-store
// request limits).
func NewOpener(reg *stores.Registry, base *aws.Config, pathStyle bool, s3opts ...func(*s3.Options)) *stores.Opener {
	oc := stores.OpenerConfig{
		S3Options: s3opts,
		PathStyle: pathStyle,
		Profile:   awsconfig.ProfileCredentials,
		S3: stores.ShareS3Clients(func(_ context.Context, c *s3.Client, s stores.Store) (storage.Provider, error) {
			return s3store.New(c, s3store.Config{Bucket: s.Bucket, Prefix: s.Prefix, Layout: s.Layout, AccountPrefix: s.AccountPrefix})
		}),
		FS:    openFS,
		GCS:   openGCS,
		Azure: openAzure,
	}
	if base != nil {
		oc.AWS = *base
	}
	return stores.NewOpener(reg, oc)
}

// StateLocation is where a producer keeps its state: state when it is set
// (a file path or s3://bucket/key), else key in bucket.
func StateLocation(state, bucket, key string) (string, error) {
	if state != "" {
		return state, nil
	}
	if bucket == "" {
		return "", errors.New("--state or --state-bucket is required")
	}
	return "s3://" + bucket + "/" + key, nil
}

// openFS opens an fs store with fsstore, sorting the listings of large
// directories in its listSpillDir (os.TempDir() when unset).
func openFS(_ context.Context, s stores.Store) (storage.Provider, error) {
	return fsstore.New(s.Root, fsstore.WithListSpillDir(s.ListSpillDir))
}
