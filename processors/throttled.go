package processors

import (
	"errors"
	"time"

	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/awsconfig"
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
//     SDK's retries (or whose retry quota ran out on a throttle), as
//     awsconfig.ThrottleError tells.
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
	if awsconfig.ThrottleError(oe.ServiceID, oe.Err) {
		return awsDependency(oe), DefaultThrottleDelay, true
	}
	return "", 0, false
}
