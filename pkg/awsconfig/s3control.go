package awsconfig

import (
	"context"
	"strings"

	smithyendpoints "github.com/aws/smithy-go/endpoints"

	"github.com/aws/aws-sdk-go-v2/service/s3control"
)

// S3Control returns an S3 Control client (S3 Batch Operations jobs). Its
// endpoint is AWS_ENDPOINT_URL_S3_CONTROL, else AWS_ENDPOINT_URL, else
// AWS's. The SDK's endpoint rules put the request's account ID in front
// of the host ({AccountId}.s3-control.{region}.amazonaws.com), a custom
// endpoint's too, which turns http://127.0.0.1:port into a host that does
// not exist; with a custom endpoint (BaseEndpoint) the client uses the
// endpoint's own host (the account ID still travels in the
// x-amz-account-id header).
func (c *Config) S3Control(optFns ...func(*s3control.Options)) *s3control.Client {
	fns := append([]func(*s3control.Options){func(o *s3control.Options) {
		o.EndpointResolverV2 = noAccountHost{s3control.NewDefaultEndpointResolverV2()}
	}}, optFns...)
	return s3control.NewFromConfig(c.AWS, fns...)
}

// NoAccountHost wraps an S3 Control endpoint resolver so that a custom
// endpoint is used as it is, without the account ID in front of its host.
func NoAccountHost(r s3control.EndpointResolverV2) s3control.EndpointResolverV2 {
	return noAccountHost{r}
}

type noAccountHost struct{ inner s3control.EndpointResolverV2 }

func (n noAccountHost) ResolveEndpoint(ctx context.Context, p s3control.EndpointParameters) (smithyendpoints.Endpoint, error) {
	e, err := n.inner.ResolveEndpoint(ctx, p)
	if err != nil || p.Endpoint == nil || p.AccountId == nil {
		return e, err
	}
	e.URI.Host = strings.TrimPrefix(e.URI.Host, *p.AccountId+".")
	return e, nil
}
