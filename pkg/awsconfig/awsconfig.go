// Package awsconfig loads the AWS SDK configuration every Mill binary uses and
// builds the service clients from it.
//
// Configuration comes from the SDK's default chain, so AWS_ENDPOINT_URL,
// service-specific endpoint variables (AWS_ENDPOINT_URL_SQS, …), AWS_REGION,
// profiles, web identity and instance roles all work unchanged. When an
// endpoint override is in force (a local emulator such as moto or LocalStack),
// S3 uses path-style addressing. This is the only package that looks at the
// process environment for AWS settings; everything under pkg/ takes clients.
//
// The S3, DynamoDB and SNS clients pace their requests to each store
// (bucket, table, topic) with a limit learnt from its throttling
// (throttle.go, pkg/aimd); other stores keep full speed. Every client
// counts each answered HTTP attempt against the pricing.Counter its
// request's context carries (count.go; a task's requests, pkg/runs).
//
// Endpoints that cannot be reached fail fast, with one line that says what
// to do (UnreachableError): Load connects to every endpoint override in
// force (the local emulator) before it returns, and the clients it builds
// connect to any other host (AWS's own endpoints) once before their first
// request there. Only a host that never answered is refused this way;
// errors of a service that answered once are retried as usual.
package awsconfig

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwschemas "github.com/aws/aws-sdk-go-v2/service/cloudwatch/schemas"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/pkg/aimd"
	"github.com/millfleet/mill/pkg/endpoint"
)

// DefaultRegion is used when no region is configured anywhere.
const DefaultRegion = "us-east-1"

// DefaultMaxAttempts is the SDK retryer's attempt limit for one call.
const DefaultMaxAttempts = 5

// Options tune Load. The zero value is ready to use.
type Options struct {
	// Region overrides the chain's region when set.
	Region string
	// MaxAttempts per SDK call (default DefaultMaxAttempts).
	MaxAttempts int
	// Logger receives notices (a defaulted region). Default slog.Default().
	Logger *slog.Logger
	// Getenv reads the environment (default os.Getenv); tests replace it.
	Getenv func(string) string
	// ConnectTimeout bounds the reachability check of each endpoint
	// (default DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Throttle tunes the per-store request limits of the S3, DynamoDB
	// and SNS clients (throttle.go; zero: pkg/aimd's defaults).
	Throttle aimd.Config
}

// Config is the loaded SDK configuration plus what Mill derives from it.
type Config struct {
	AWS aws.Config
	// EndpointOverride is true when a custom endpoint is in force for any
	// service (AWS_ENDPOINT_URL or a service-specific variable).
	EndpointOverride bool

	throttle *throttling
}

// defaultOptions holds the values Load gives an Options' zero or negative
// fields.
var defaultOptions = Options{MaxAttempts: DefaultMaxAttempts, ConnectTimeout: DefaultConnectTimeout, Getenv: os.Getenv}

// Load reads the default chain. A missing region is defaulted to
// DefaultRegion with a logged notice rather than failing the first call.
func Load(ctx context.Context, o Options) (*Config, error) {
	defaults.FillNonPositive(&o, defaultOptions)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	opts := []func(*config.LoadOptions) error{
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
			// The SDK keeps 10 idle connections a host; a Workman has more
			// requests than that in flight at once on SQS alone (a long
			// poll per quiet queue, batch receives, deletes, visibility
			// changes), and every connection past 10 was closed after its
			// request and dialled again for the next one.
			t.MaxIdleConnsPerHost = endpoint.MaxIdleConnsPerHost
			t.MaxIdleConns = 2 * endpoint.MaxIdleConnsPerHost
		})),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = o.MaxAttempts
				so.MaxBackoff = 5 * time.Second
				so.Retryables = append(so.Retryables, brokenBodyRetryable) // wholebody.go
			})
		}),
	}
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("awsconfig: load: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
		o.Logger.Info("no AWS region configured; using the default", "region", DefaultRegion)
	}
	cfg.APIOptions = append(cfg.APIOptions, countRequests) // count.go
	c := &Config{AWS: cfg, throttle: newThrottling(o.Throttle)}
	reach := newReacher(o.ConnectTimeout)
	var overrides []*url.URL
	override := func(raw, source string) error {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return fmt.Errorf("awsconfig: %s %q: not a URL", source, raw)
		}
		c.EndpointOverride = true
		reach.sources[hostPort(u)] = source
		overrides = append(overrides, u)
		return nil
	}
	if cfg.BaseEndpoint != nil && *cfg.BaseEndpoint != "" {
		source := "the AWS profile's endpoint_url"
		if o.Getenv("AWS_ENDPOINT_URL") != "" {
			source = "AWS_ENDPOINT_URL"
		}
		if err := override(*cfg.BaseEndpoint, source); err != nil {
			return nil, err
		}
	}
	for _, v := range []string{"AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_CLOUDWATCH", "AWS_ENDPOINT_URL_S3_CONTROL"} {
		if raw := o.Getenv(v); raw != "" {
			if err := override(raw, v); err != nil {
				return nil, err
			}
		}
	}
	for _, u := range overrides {
		if err := reach.check(ctx, u); err != nil {
			return nil, err
		}
	}
	if cfg.HTTPClient != nil {
		c.AWS.HTTPClient = &checkedClient{inner: cfg.HTTPClient, r: reach}
	}
	return c, nil
}

// S3 returns an S3 client; path-style addressing when an endpoint override
// is in force (emulators do not serve virtual-hosted buckets on 127.0.0.1).
func (c *Config) S3(optFns ...func(*s3.Options)) *s3.Client {
	fns := append([]func(*s3.Options){func(o *s3.Options) {
		o.UsePathStyle = c.EndpointOverride
		// Mill verifies content MD5s itself; the SDK's plain-text notice
		// that a response carried no checksum would only break JSON logs.
		o.DisableLogOutputChecksumValidationSkipped = true
		c.LimitS3(o)
	}}, optFns...)
	return s3.NewFromConfig(c.AWS, fns...)
}

// SQS returns an SQS client.
func (c *Config) SQS(optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.NewFromConfig(c.AWS, optFns...)
}

// SNS returns an SNS client (notifications).
func (c *Config) SNS(optFns ...func(*sns.Options)) *sns.Client {
	fns := append([]func(*sns.Options){func(o *sns.Options) {
		if f := c.throttleOption("sns"); f != nil {
			o.APIOptions = append(o.APIOptions, f)
		}
	}}, optFns...)
	return sns.NewFromConfig(c.AWS, fns...)
}

// DynamoDB returns a DynamoDB client.
func (c *Config) DynamoDB(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	fns := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		if f := c.throttleOption("dynamodb"); f != nil {
			o.APIOptions = append(o.APIOptions, f)
		}
	}}, optFns...)
	return dynamodb.NewFromConfig(c.AWS, fns...)
}

// AutoScaling returns an Auto Scaling client.
func (c *Config) AutoScaling(optFns ...func(*autoscaling.Options)) *autoscaling.Client {
	return autoscaling.NewFromConfig(c.AWS, optFns...)
}

// STS returns an STS client.
func (c *Config) STS(optFns ...func(*sts.Options)) *sts.Client {
	return sts.NewFromConfig(c.AWS, optFns...)
}

// CloudWatch returns a CloudWatch client speaking the AWS query protocol.
// The SDK's default for CloudWatch is Smithy RPC v2 CBOR, which AWS accepts
// but local emulators (moto 5.2) do not; the query protocol works with both.
func (c *Config) CloudWatch(optFns ...func(*cloudwatch.Options)) *cloudwatch.Client {
	fns := append([]func(*cloudwatch.Options){func(o *cloudwatch.Options) {
		o.Protocol = awsquery.New(cwschemas.GraniteServiceVersion20100801)
	}}, optFns...)
	return cloudwatch.NewFromConfig(c.AWS, fns...)
}

// ProfileCredentials returns the credentials of the named profile of the
// shared AWS config and credentials files (AWS_CONFIG_FILE,
// AWS_SHARED_CREDENTIALS_FILE, default ~/.aws/config and
// ~/.aws/credentials) — static keys, a role the profile assumes, SSO, web
// identity, a credential process or an explicit credential_source. The
// profile is read on first use (and again after a failure), so a store
// naming a missing profile fails its first request with a clear error. A
// profile that names no credentials of its own is refused: the SDK would
// fall back to the instance's or container's credentials, which is what
// naming a profile is meant to avoid. The credentials environment
// variables are not used for it.
func ProfileCredentials(name string) aws.CredentialsProvider {
	return &profileProvider{name: name}
}

type profileProvider struct {
	name  string
	mu    sync.Mutex
	inner aws.CredentialsProvider
}

func (p *profileProvider) Retrieve(ctx context.Context) (aws.Credentials, error) {
	inner, err := p.provider(ctx)
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("awsconfig: profile %q: %w", p.name, err)
	}
	return inner.Retrieve(ctx)
}

// provider loads the profile's credentials provider once.
func (p *profileProvider) provider(ctx context.Context) (aws.CredentialsProvider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inner != nil {
		return p.inner, nil
	}
	env, err := config.NewEnvConfig()
	if err != nil {
		return nil, err
	}
	sc, err := config.LoadSharedConfigProfile(ctx, p.name, func(o *config.LoadSharedConfigOptions) {
		if env.SharedCredentialsFile != "" {
			o.CredentialsFiles = []string{env.SharedCredentialsFile}
		}
		if env.SharedConfigFile != "" {
			o.ConfigFiles = []string{env.SharedConfigFile}
		}
	})
	if err != nil {
		return nil, err
	}
	if !ownCredentials(sc) {
		return nil, errors.New("it names no credentials of its own (keys, role_arn, source_profile, credential_source, credential_process, sso_*, web_identity_token_file)")
	}
	cfg, err := config.LoadDefaultConfig(ctx, config.WithSharedConfigProfile(p.name))
	if err != nil {
		return nil, err
	}
	if cfg.Credentials == nil {
		return nil, errors.New("no credentials")
	}
	p.inner = cfg.Credentials
	return p.inner, nil
}

// ownCredentials reports whether a profile says where its credentials
// come from.
func ownCredentials(c config.SharedConfig) bool {
	return c.Credentials.HasKeys() || c.RoleARN != "" || c.SourceProfileName != "" || c.CredentialSource != "" ||
		c.CredentialProcess != "" || c.WebIdentityTokenFile != "" || c.SSOSessionName != "" || c.SSOStartURL != "" ||
		c.LoginSession != ""
}
