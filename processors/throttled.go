package processors

import (
	"errors"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// ResultThrottled: a store throttled the task's requests (IsThrottled):
// released with a delay, not an attempt.
const ResultThrottled = "throttled"

// DefaultThrottleDelay is how long a throttled task is held back when
// nothing says how long to wait.
const DefaultThrottleDelay = 5 * time.Second

// IsThrottled reports whether err says a store throttled the task's
// requests, which store, and how long to wait before trying again:
//
//   - an error (in err's chain) with a method Throttled() (string,
//     time.Duration), as aimd.ThrottledError has: the request was not sent
//     because the store's learnt limit would have kept it waiting too long
//     (pkg/aimd, through pkg/awsconfig);
//   - an AWS operation whose last attempt the service throttled after the
//     SDK's retries (or whose retry quota ran out on a throttle): an error
//     code of retry.DefaultThrottleErrorCodes (S3 SlowDown,
//     ThrottlingException, ProvisionedThroughputExceededException, …), or
//     an S3 503 (S3 answers its Slow Down without a body to a HEAD).
//
// Throttling is not an outage: the store answers, slower than asked. A
// task it stops is released with the delay (DefaultThrottleDelay when
// nothing says) and no attempt is counted; no circuit opens (pkg/workman).
// A permanent error is never throttled.
func IsThrottled(err error) (store string, retryIn time.Duration, ok bool) {
	if err == nil || IsPermanent(err) {
		return "", 0, false
	}
	var th interface {
		Throttled() (string, time.Duration)
	}
	if errors.As(err, &th) {
		s, d := th.Throttled()
		return s, max(d, time.Second), true
	}
	var oe *smithy.OperationError
	if !errors.As(err, &oe) {
		return "", 0, false
	}
	if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(oe.Err) == aws.TrueTernary {
		return awsDependency(oe), DefaultThrottleDelay, true
	}
	var re *awshttp.ResponseError
	if oe.ServiceID == "S3" && errors.As(oe.Err, &re) && re.HTTPStatusCode() == http.StatusServiceUnavailable {
		return awsDependency(oe), DefaultThrottleDelay, true
	}
	return "", 0, false
}
