package processors

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/smithy-go"
)

// refusedTurn is an error saying of itself that its store throttled, as
// aimd.ThrottledError does.
type refusedTurn struct{}

func (refusedTurn) Error() string                      { return "turn refused" }
func (refusedTurn) Throttled() (string, time.Duration) { return "s3/hot", 12 * time.Second }

func TestIsThrottled(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		store string // "" = not throttled
		in    time.Duration
	}{
		{"limiter refused a turn", fmt.Errorf("get: %w", refusedTurn{}), "s3/hot", 12 * time.Second},
		{"s3 slow down", awsStatus("S3", 503, "SlowDown"), "s3 s3.example.test", DefaultThrottleDelay},
		{"s3 503 without a code (HEAD)", awsStatus("S3", 503, ""), "s3 s3.example.test", DefaultThrottleDelay},
		{"dynamodb throttling", awsStatus("DynamoDB", 400, "ThrottlingException"), "dynamodb dynamodb.example.test", DefaultThrottleDelay},
		{"dynamodb throughput", awsStatus("DynamoDB", 400, "ProvisionedThroughputExceededException"), "dynamodb dynamodb.example.test", DefaultThrottleDelay},
		{"sns throttled", awsStatus("SNS", 400, "Throttling"), "sns sns.example.test", DefaultThrottleDelay},
		{"quota ran out on a throttle", fmt.Errorf("put: %w", joinQuota(awsStatus("S3", 503, "SlowDown"))), "s3 s3.example.test", DefaultThrottleDelay},
		{"dynamodb 500 is an outage", awsStatus("DynamoDB", 500, "InternalServerError"), "", 0},
		{"dynamodb 503 is an outage", awsStatus("DynamoDB", 503, "ServiceUnavailable"), "", 0},
		{"s3 access denied", awsStatus("S3", 403, "AccessDenied"), "", 0},
		{"permanent wins", Permanent(refusedTurn{}), "", 0},
		{"plain", errors.New("x"), "", 0},
	}
	for _, c := range cases {
		store, in, ok := IsThrottled(c.err)
		if ok != (c.store != "") || store != c.store || in != c.in {
			t.Errorf("%s: IsThrottled = %q, %v, %v; want %q, %v", c.name, store, in, ok, c.store, c.in)
		}
		if c.store == "" {
			continue
		}
		if dep, out := IsUnavailable(c.err); out {
			t.Errorf("%s: throttling classed as an outage of %q", c.name, dep)
		}
		if r := Result(context.Background(), c.err); r != ResultThrottled {
			t.Errorf("%s: Result = %s, want %s", c.name, r, ResultThrottled)
		}
	}
}

// joinQuota is what the SDK's retry middleware returns when the retry
// quota runs out: the attempt's error joined with the quota's.
func joinQuota(err error) error {
	oe := err.(*smithy.OperationError)
	oe.Err = errors.Join(oe.Err, ratelimit.QuotaExceededError{Available: 0, Requested: 5})
	return oe
}
