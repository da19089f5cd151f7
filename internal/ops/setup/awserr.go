package setup

import (
	"errors"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
)

// errorCode returns the AWS error code of err ("NotFound",
// "QueueDoesNotExist", …), or "".
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// notImplemented reports whether err says the endpoint does not implement
// the operation at all (as local emulators do for some settings), as opposed
// to refusing it. Only optional settings are allowed to be skipped this way.
func notImplemented(err error) bool {
	if err == nil {
		return false
	}
	switch errorCode(err) {
	case "NotImplemented", "NotImplementedException", "UnsupportedOperation", "InternalFailure.NotImplemented":
		return true
	}
	return httpStatus(err) == http.StatusNotImplemented
}
