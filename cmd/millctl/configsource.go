package main

import (
	"context"
	"flag"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
)

// configSource is the command's wiring.ConfigSource (--config-bucket,
// --config-prefix, --config-dir) with the S3 client it needs when the
// source is a bucket, made on first use.
type configSource struct {
	*wiring.ConfigSource
	a              *app
	cachedS3Client *s3.Client
}

// configFlags defines --config-bucket, --config-prefix and --config-dir.
func configFlags(fs *flag.FlagSet, a *app) *configSource {
	return &configSource{ConfigSource: wiring.ConfigFlags(fs), a: a}
}

// configOptions are a flag group: the config source.
type configOptions struct{ src *configSource }

func (o *configOptions) defineGroup(fs *flag.FlagSet, a *app) { o.src = configFlags(fs, a) }

// s3 is the client of the config bucket; nil for a directory.
func (c *configSource) s3(ctx context.Context) (*s3.Client, error) {
	if c.Dir == "" && c.cachedS3Client == nil {
		cfg, err := c.a.awsConfig(ctx)
		if err != nil {
			return nil, err
		}
		c.cachedS3Client = cfg.S3()
	}
	return c.cachedS3Client, nil
}

// policies returns the policy repository.
func (c *configSource) policies(ctx context.Context) (policy.Repository, error) {
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return c.Policies(cl), nil
}

// files is the versioned store of the configuration files (conditional
// writes, history) over the same source.
func (c *configSource) files(ctx context.Context) (configstore.Store, error) {
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return c.Files(cl, stores.MaxFileSize)
}

// registry loads accounts.json.
func (c *configSource) registry(ctx context.Context) (*stores.Registry, error) {
	cl, err := c.s3(ctx)
	if err != nil {
		return nil, err
	}
	return c.LoadRegistry(ctx, cl)
}
