package awsconfig

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/millfleet/mill/pkg/aimd"
)

// Per-store request limits (pkg/aimd). Every S3, DynamoDB and SNS client
// built from a Config shares one Limiter, keyed by the store a request
// names: "s3 <bucket>", "dynamodb <table>", "sns <topic>". The limiter
// sits in the SDK's middleware stack rather than around the storage port
// because only there does it see every HTTP attempt — the SDK's own
// retries of a throttled request included, each of which must wait its
// turn and each of which is a throttling signal — and because one place
// then covers the stores, the audit log, the fleet registry and the
// notifications alike. Two middlewares do it: at Initialize, the key is
// read from the operation's input (Bucket, TableName, TopicArn) and a
// retry quota that ran out is a throttle; right after the retry
// middleware (Finalize, so once per attempt) the request waits its turn
// and its answer is observed — throttled (ThrottleError), or accepted.
// Requests that name no store (ListBuckets, BatchWriteItem) are not
// limited.

type throttleKeyCtx struct{}

// throttling holds the limiter and who is told of its changes.
type throttling struct {
	lim      *aimd.Limiter
	onChange atomic.Pointer[func(aimd.Change)]
}

func newThrottling(cfg aimd.Config) *throttling {
	t := &throttling{}
	cfg.OnChange = func(c aimd.Change) {
		if f := t.onChange.Load(); f != nil {
			(*f)(c)
		}
	}
	t.lim = aimd.New(cfg)
	return t
}

// Limiter returns the per-store request limiter every S3, DynamoDB and
// SNS client built from c shares (nil for a Config not made by Load).
func (c *Config) Limiter() *aimd.Limiter {
	if c.throttle == nil {
		return nil
	}
	return c.throttle.lim
}

// OnLimitChange has f told of every change of a store's request limit
// (the metrics); it replaces the previous f. f must not block.
func (c *Config) OnLimitChange(f func(aimd.Change)) {
	if c.throttle != nil {
		c.throttle.onChange.Store(&f)
	}
}

// LimitS3 makes an S3 client built elsewhere from c.AWS (a store's own
// client, stores.Opener) share c's per-store request limits.
func (c *Config) LimitS3(o *s3.Options) {
	if f := c.throttleOption("s3"); f != nil {
		o.APIOptions = append(o.APIOptions, f)
	}
}

// throttleOption returns the API option that limits the requests of a
// client of service svc ("s3", "dynamodb", "sns"), or nil.
func (c *Config) throttleOption(svc string) func(*middleware.Stack) error {
	if c.throttle == nil {
		return nil
	}
	lim := c.throttle.lim
	return func(st *middleware.Stack) error {
		err := st.Initialize.Add(middleware.InitializeMiddlewareFunc("MillThrottleKey",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				key := storeKey(svc, in.Parameters)
				if key == "" {
					return next.HandleInitialize(ctx, in)
				}
				ctx = middleware.WithStackValue(ctx, throttleKeyCtx{}, key)
				out, md, err := next.HandleInitialize(ctx, in)
				var qe ratelimit.QuotaExceededError
				if errors.As(err, &qe) {
					lim.Observe(key, true)
				}
				return out, md, err
			}), middleware.After)
		if err != nil {
			return err
		}
		return st.Finalize.Insert(middleware.FinalizeMiddlewareFunc("MillThrottle",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				key, _ := middleware.GetStackValue(ctx, throttleKeyCtx{}).(string)
				if key == "" {
					return next.HandleFinalize(ctx, in)
				}
				if err := lim.Wait(ctx, key); err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				sent := time.Now()
				out, md, err := next.HandleFinalize(ctx, in)
				switch {
				case err == nil:
					lim.Observe(key, false)
				case ThrottleError(svc, err):
					lim.ObserveSent(key, true, sent)
				default:
					var re *awshttp.ResponseError
					if errors.As(err, &re) && re.HTTPStatusCode() < 500 {
						lim.Observe(key, false) // answered: the request was taken
					}
				}
				return out, md, err
			}), "Retry", middleware.After)
	}
}

// ThrottleError reports whether err, the answer of service svc to one
// request, is throttling: an error code the SDK classes as throttling
// (retry.DefaultThrottleErrorCodes: SlowDown, ThrottlingException,
// ProvisionedThroughputExceededException, …), or, from S3, a 503 (S3
// answers a HEAD's Slow Down without a body to carry the code).
func ThrottleError(svc string, err error) bool {
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary {
		return true
	}
	var re *awshttp.ResponseError
	return strings.EqualFold(svc, "s3") && errors.As(err, &re) && re.HTTPStatusCode() == http.StatusServiceUnavailable
}

// storeKey names the store an operation's input addresses, or "".
func storeKey(svc string, params any) string {
	var name string
	switch svc {
	case "s3":
		name = stringField(params, "Bucket")
	case "dynamodb":
		name = stringField(params, "TableName")
	case "sns":
		name = stringField(params, "TopicArn")
		name = name[strings.LastIndexByte(name, ':')+1:]
	}
	if name == "" {
		return ""
	}
	return svc + " " + name
}

// stringField returns the *string field name of the struct params points
// to, or "".
func stringField(params any, name string) string {
	v := reflect.ValueOf(params)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return ""
	}
	f := v.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Pointer || f.IsNil() || f.Elem().Kind() != reflect.String {
		return ""
	}
	return f.Elem().String()
}
