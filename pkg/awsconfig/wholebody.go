package awsconfig

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// A response whose body breaks before its end (the connection closed
// short of the Content-Length) is retried by the SDK when the break
// happens inside the call — a listing's or a table read's body is decoded
// inside it — once brokenBodyRetryable is among its retryables (Load). A GetObject's body is the caller's, read after the call
// returned; ReadWhole brings the read of a small object inside the call,
// so its breaks are retried too. Content (a store's items) is streamed
// and read on where it is read (the bit check reads on from its hash:
// processors/bit).

// brokenBodyRetryable makes the SDK retry a call whose response body
// broke while the call decoded it (a listing's XML, a table read's JSON):
// the SDK's own checks let that unexpected EOF through as final.
var brokenBodyRetryable = retry.IsErrorRetryableFunc(func(err error) aws.Ternary {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
})

// BrokenBodyError is a body that broke while ReadWhole read it; the
// SDK's retryer retries it (RetryableError).
type BrokenBodyError struct{ Err error }

func (e *BrokenBodyError) Error() string        { return "response body broke: " + e.Err.Error() }
func (e *BrokenBodyError) Unwrap() error        { return e.Err }
func (e *BrokenBodyError) RetryableError() bool { return true }

// MaxWholeBody is the largest object ReadWhole reads inside the call; a
// larger one is left streaming (the callers refuse it by its length).
const MaxWholeBody = 64 << 20

// ReadWhole is a GetObject option for small objects (configuration, state,
// policies): the body is read whole inside the call, so a body that breaks
// is retried by the SDK as a failed request (with its backoff and attempt
// limit) instead of failing the caller's read.
func ReadWhole(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Deserialize.Add(middleware.DeserializeMiddlewareFunc("MillReadWhole", readWhole), middleware.Before)
	})
}

func readWhole(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	g, ok := out.Result.(*s3.GetObjectOutput)
	if err != nil || !ok || g.Body == nil || aws.ToInt64(g.ContentLength) > MaxWholeBody {
		return out, md, err
	}
	b, err := io.ReadAll(io.LimitReader(g.Body, MaxWholeBody+1))
	if err != nil {
		g.Body.Close()
		return out, md, &BrokenBodyError{Err: err}
	}
	if len(b) > MaxWholeBody { // no length said: the rest streams
		g.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), g.Body), g.Body}
		return out, md, nil
	}
	g.Body.Close()
	g.Body = io.NopCloser(bytes.NewReader(b))
	return out, md, nil
}
