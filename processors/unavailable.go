package processors

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/millfleet/mill/internal/base/pgerr"
)

// Dependencies named by Unavailable errors. An AWS service is named by its
// SDK service ID in lower case and, where the failed request shows it, the
// host it was sent to ("s3 bucket.s3.eu-west-1.amazonaws.com", "dynamodb
// dynamodb.us-east-1.amazonaws.com"), so one store's outage does not stop
// the tasks of another.
const DependencyPostgres = "postgres"

// UnavailableError says a task could not run because a dependency it
// needs (the bit log's PostgreSQL, DynamoDB, a store, SNS) does not answer:
// an outage of the dependency, not a failure of the task. Workman counts no
// attempt for it: it opens a circuit for Dependency, hands the task back,
// stops taking the task types that needed it, and resumes when the
// dependency answers again (pkg/workman, circuit.go).
type UnavailableError struct {
	Dependency string
	Err        error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("%s unavailable: %v", e.Dependency, e.Err)
}
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable reports the dependency the error names.
func (e *UnavailableError) Unavailable() string { return e.Dependency }

// Unavailable marks err as an outage of dependency dep. Unavailable(dep,
// nil) is nil.
func Unavailable(dep string, err error) error {
	if err == nil {
		return nil
	}
	return &UnavailableError{Dependency: dep, Err: err}
}

// IsUnavailable reports whether err says a dependency does not answer, and
// which: an error (in err's chain) with a method Unavailable() string
// naming it, as UnavailableError has (so a domain package marks its
// errors without importing this one), else what the drivers' errors in the
// chain say, classified where they are typed:
//
//   - PostgreSQL (pgx): a connection that cannot be made
//     (*pgconn.ConnectError), or a server error of class 08 (connection
//     exception), 57P01..57P03 (shutting down, starting up) or 53300 (too
//     many connections).
//   - AWS (aws-sdk-go-v2): an operation that failed with an error the
//     SDK itself classes as transient (a connection refused or reset, a
//     timeout, a 5xx) after its retries, or whose retry quota ran out. A
//     4xx that is not throttling (AccessDenied, NoSuchKey, a failed
//     condition) is the task's own failure.
//
// A permanent error is never an outage (IsPermanent wins), nor is
// throttling (IsThrottled wins: the store answers, and one bucket's
// throttling must not stop the tasks of every store behind its
// endpoint), nor a context's cancellation or deadline on its own.
func IsUnavailable(err error) (dep string, ok bool) {
	if err == nil || IsPermanent(err) {
		return "", false
	}
	if _, _, throttled := IsThrottled(err); throttled {
		return "", false
	}
	var u interface{ Unavailable() string }
	if errors.As(err, &u) && u.Unavailable() != "" {
		return u.Unavailable(), true
	}
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return DependencyPostgres, true
	}
	if pgerr.Is(err, pgerr.ClassConnectionException, pgerr.AdminShutdown, pgerr.CrashShutdown, pgerr.CannotConnectNow, pgerr.TooManyConnections) {
		return DependencyPostgres, true
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) && awsTransient(oe.Err) {
		return awsDependency(oe), true
	}
	return "", false
}

// awsTransient reports whether the SDK classes err as worth retrying: its
// retries ran out on it, or its retry quota did.
func awsTransient(err error) bool {
	var qe ratelimit.QuotaExceededError
	if errors.As(err, &qe) {
		return true
	}
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// awsDependency names the service of oe, with the host where the error
// shows the request.
func awsDependency(oe *smithy.OperationError) string {
	svc := strings.ToLower(strings.ReplaceAll(oe.ServiceID, " ", ""))
	var u *url.URL
	var re *awshttp.ResponseError
	var ue *url.Error
	switch {
	case errors.As(oe.Err, &re) && re.Response != nil && re.Response.Response != nil && re.Response.Request != nil:
		u = requestURL(re.Response.Response)
	case errors.As(oe.Err, &ue):
		u, _ = url.Parse(ue.URL)
	}
	if u == nil || u.Host == "" {
		return svc
	}
	return svc + " " + strings.ToLower(u.Host)
}

func requestURL(r *http.Response) *url.URL {
	if r.Request == nil {
		return nil
	}
	return r.Request.URL
}
