package awsconfig

import (
	"context"
	"strings"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/millfleet/mill/pkg/pricing"
)

// Counted requests. Load adds countRequests to the configuration's API
// options, so every client built from Config.AWS (S3, the stores' own S3
// clients, SQS, SNS, DynamoDB, CloudWatch…) runs it. It sits in the
// Deserialize step, below the retry middleware, so it sees each HTTP
// attempt: an attempt that was answered (any status: AWS bills a 503 or
// a 404 as it bills a 200) is counted once against the pricing.Counter
// of the request's context (a task's; pricing.WithCounter), by service
// and operation. An attempt that got no answer (refused, reset) is not
// counted; a request whose context carries no Counter costs one context
// look-up. Stores outside AWS (fs, GCS, Azure) do not go through it.

// countRequestsName names the middleware in the stack.
const countRequestsName = "MillCountRequests"

func countRequests(st *middleware.Stack) error {
	return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc(countRequestsName,
		func(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
			out, md, err := next.HandleDeserialize(ctx, in)
			if c := pricing.FromContext(ctx); c != nil && answered(out.RawResponse) {
				c.Add(serviceName(awsmiddleware.GetServiceID(ctx)), awsmiddleware.GetOperationName(ctx), 1)
			}
			return out, md, err
		}), middleware.After)
}

// answered reports whether raw is a response the server sent (the SDK
// hands on an empty one when the request got none).
func answered(raw any) bool {
	r, ok := raw.(*smithyhttp.Response)
	return ok && r != nil && r.Response != nil && r.StatusCode != 0
}

// serviceName is the pricing service of an SDK service ID ("S3" → "s3").
func serviceName(id string) string {
	switch id {
	case "S3":
		return pricing.S3
	case "SQS":
		return pricing.SQS
	case "SNS":
		return pricing.SNS
	case "DynamoDB":
		return pricing.DynamoDB
	}
	return strings.ToLower(strings.ReplaceAll(id, " ", ""))
}
