package setup_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/internal/testkit/testenv"
)

// TestQueueEnsure: Ensure creates a queue with its redrive policy, and a
// second Ensure with other attributes converges the same queue to them.
func TestQueueEnsure(t *testing.T) {
	c := testenv.AWS(t).SQS()
	prefix := testenv.Prefix(t)
	testenv.CleanupQueues(t, c, prefix)
	ctx := context.Background()
	if _, err := (setup.Queue{Client: c, QueueName: prefix + "dead", Retention: 14 * 24 * time.Hour}).Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	work := setup.Queue{Client: c, QueueName: prefix + "work", VisibilityTimeout: 45 * time.Second, DeadLetter: prefix + "dead", MaxReceiveCount: 3}
	url, err := work.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	work.VisibilityTimeout = time.Minute
	url2, err := work.Ensure(ctx)
	if err != nil || url2 != url {
		t.Fatalf("second ensure: url %q (first %q), err %v", url2, url, err)
	}
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Attributes
	rp, err := setup.ParseRedrivePolicy(a["RedrivePolicy"])
	if a["VisibilityTimeout"] != "60" || err != nil || !strings.HasSuffix(rp.DeadLetterTargetArn, ":"+prefix+"dead") || rp.MaxReceiveCount != 3 {
		t.Fatalf("attributes after converging: %v (redrive %+v, %v)", a, rp, err)
	}
}
