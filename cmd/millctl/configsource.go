package main

import (
	"context"
	"flag"
	"path/filepath"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"github.com/millfleet/mill/pkg/configstore/s3configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
)

// configSource is where accounts.json and the duplication policies live:
// a local directory (--config-dir) or the config bucket (--config-bucket,
// under --config-prefix).
type configSource struct {
	a              *app
	bucket, dir    *string
	prefix         *string
	cachedS3Client *s3.Client
}

// configFlags defines --config-bucket, --config-prefix and --config-dir.
func configFlags(fs *flag.FlagSet, a *app) *configSource {
	return &configSource{
		a:      a,
		bucket: fs.String("config-bucket", setup.DefaultConfigBucket, "S3 `bucket` holding accounts.json and the duplication policies"),
		prefix: fs.String("config-prefix", "", "key `prefix` of those files in the config bucket"),
		dir:    fs.String("config-dir", "", "local `directory` to use instead of the config bucket"),
	}
}

func (c *configSource) s3(ctx context.Context) (*s3.Client, error) {
	if c.cachedS3Client == nil {
		cfg, err := c.a.awsConfig(ctx)
		if err != nil {
			return nil, err
		}
		c.cachedS3Client = cfg.S3()
	}
	return c.cachedS3Client, nil
}

// where names the source for messages.
func (c *configSource) where() string {
	if *c.dir != "" {
		return *c.dir
	}
	return "s3://" + *c.bucket + "/" + *c.prefix
}

// policies returns the policy repository.
func (c *configSource) policies(ctx context.Context) (policy.Repository, error) {
	if *c.dir != "" {
		return policy.NewDir(*c.dir), nil
	}
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return policy.NewS3(cl, *c.bucket, *c.prefix), nil
}

// files is the versioned store of the configuration files (conditional
// writes, history) over the same source.
func (c *configSource) files(ctx context.Context) (configstore.Store, error) {
	if *c.dir != "" {
		return fsconfigstore.New(*c.dir, stores.MaxFileSize)
	}
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return s3configstore.New(cl, *c.bucket, *c.prefix, stores.MaxFileSize), nil
}

// registry loads accounts.json.
func (c *configSource) registry(ctx context.Context) (*stores.Registry, error) {
	if *c.dir != "" {
		return stores.LoadFile(filepath.Join(*c.dir, stores.FileName))
	}
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return stores.LoadS3(ctx, cl, *c.bucket, *c.prefix+stores.FileName)
}
