package processors

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/jackc/pgx/v5/pgconn"
)

func awsStatus(svc string, status int, code string) error {
	req, _ := http.NewRequest(http.MethodPost, "https://"+svc+".example.test/", nil)
	resp := &http.Response{StatusCode: status, Request: req}
	var inner error = &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: resp},
		Err: &smithy.GenericAPIError{Code: code}}}
	return &smithy.OperationError{ServiceID: svc, OperationName: "Op", Err: inner}
}

func TestIsUnavailable(t *testing.T) {
	refused := &url.Error{Op: "Post", URL: "http://127.0.0.1:4566/bucket/key",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	cases := []struct {
		name string
		err  error
		dep  string // "" = not an outage
	}{
		{"marked", fmt.Errorf("x: %w", Unavailable("sns", errors.New("down"))), "sns"},
		{"pg shutting down", fmt.Errorf("bit log: %w", &pgconn.PgError{Code: "57P01"}), DependencyPostgres},
		{"pg connection exception", &pgconn.PgError{Code: "08006"}, DependencyPostgres},
		{"pg unique violation", &pgconn.PgError{Code: "23505"}, ""},
		{"s3 refused", &smithy.OperationError{ServiceID: "S3", Err: refused}, "s3 127.0.0.1:4566"},
		{"dynamodb 500", awsStatus("DynamoDB", 500, "InternalServerError"), "dynamodb dynamodb.example.test"},
		{"dynamodb throttled", awsStatus("DynamoDB", 400, "ThrottlingException"), ""},
		{"s3 access denied", awsStatus("S3", 403, "AccessDenied"), ""},
		{"s3 no such key", awsStatus("S3", 404, "NoSuchKey"), ""},
		{"permanent wins", Permanent(Unavailable("postgres", errors.New("x"))), ""},
		{"task deadline", context.DeadlineExceeded, ""},
		{"plain", errors.New("disk on fire"), ""},
	}
	for _, c := range cases {
		dep, ok := IsUnavailable(c.err)
		if ok != (c.dep != "") || dep != c.dep {
			t.Errorf("%s: IsUnavailable(%v) = %q, %v; want %q", c.name, c.err, dep, ok, c.dep)
		}
		if want := c.dep != ""; want != (Result(context.Background(), c.err) == ResultUnavailable) {
			t.Errorf("%s: Result = %s", c.name, Result(context.Background(), c.err))
		}
	}
}
