package telemetry

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// awsMiddlewareID names the span middleware in the SDK's stacks.
const awsMiddlewareID = "MillTraceSpan"

// AWS adds a client span per AWS SDK operation (S3, DynamoDB, SQS, SNS,
// …) to cfg: every client built from cfg afterwards has it. The span, a
// child of the call's ctx, covers the SDK's retries and names the service
// and operation ("S3.GetObject"), the HTTP status and the request ID. With
// t off cfg is left as it is.
func (t *Tracing) AWS(cfg *aws.Config) {
	if t == nil || cfg == nil {
		return
	}
	cfg.APIOptions = append(cfg.APIOptions, t.awsStack)
}

func (t *Tracing) awsStack(s *middleware.Stack) error {
	if _, ok := s.Initialize.Get(awsMiddlewareID); ok {
		return nil
	}
	return s.Initialize.Add(middleware.InitializeMiddlewareFunc(awsMiddlewareID, t.awsSpan), middleware.After)
}

func (t *Tracing) awsSpan(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	svc, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	ctx, span := t.tracer.Start(ctx, svc+"."+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("rpc.system", "aws-api"),
			attribute.String("rpc.service", svc), attribute.String("rpc.method", op),
			attribute.String("cloud.region", awsmiddleware.GetRegion(ctx))))
	out, md, err := next.HandleInitialize(ctx, in)
	if r, ok := awsmiddleware.GetRawResponse(md).(*smithyhttp.Response); ok && r != nil {
		span.SetAttributes(attribute.Int("http.response.status_code", r.StatusCode))
	}
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok {
		span.SetAttributes(attribute.String("aws.request_id", id))
	}
	endSpan(span, err)
	return out, md, err
}
