package sqsqueue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/queue"
)

// EntryError is one failed entry of an SQS batch call. errors.Is matches the
// portable queue error its code and message mean (queue.ErrTooLarge,
// queue.ErrReceiptInvalid, queue.ErrInvalid, queue.ErrNotFound,
// queue.ErrPurgeInProgress).
type EntryError struct {
	Code        string
	Message     string
	SenderFault bool
}

func (e *EntryError) Error() string {
	fault := "service"
	if e.SenderFault {
		fault = "sender"
	}
	return fmt.Sprintf("sqs %s (%s fault): %s", e.Code, fault, e.Message)
}

// Unwrap returns the portable error of the code, if any.
func (e *EntryError) Unwrap() error { return portable(e.Code, e.Message) }

// baseCode strips what the protocols and emulators add around an SQS error
// code: a JSON type's namespace ("com.amazonaws.sqs#QueueDoesNotExist") and
// colon suffix, the query protocol's "AWS.SimpleQueueService." prefix, and
// an "Exception" suffix (LocalStack names batch entries after its exception
// classes, "InvalidParameterValueException").
func baseCode(code string) string {
	if _, after, ok := strings.Cut(code, "#"); ok {
		code = after
	}
	code, _, _ = strings.Cut(code, ":")
	code = strings.TrimPrefix(code, "AWS.SimpleQueueService.")
	return strings.TrimSuffix(code, "Exception")
}

// portable returns the portable queue error an SQS error code and message
// mean, or nil.
//
// A receipt handle that no longer names an in-flight delivery comes in
// several shapes: ReceiptHandleIsInvalid (a handle SQS cannot read, or
// moto's answer for a deleted message), MessageNotInflight, InvalidIdFormat
// (a handle of an older format), and — what AWS answers for a deleted message
// or an expired handle — InvalidParameterValue with a message naming the
// ReceiptHandle parameter ("Value … for parameter ReceiptHandle is invalid.
// Reason: Message does not exist or is not available for visibility timeout
// change." or "… Reason: The receipt handle has expired."). Any other
// invalid parameter (a visibility timeout out of range, or beyond the 12
// hours a message may stay in flight) is queue.ErrInvalid.
func portable(code, message string) error {
	switch c := baseCode(code); c {
	case "ReceiptHandleIsInvalid", "InvalidReceiptHandle", "MessageNotInflight", "InvalidIdFormat":
		return queue.ErrReceiptInvalid
	case "QueueDoesNotExist", "NonExistentQueue":
		return queue.ErrNotFound
	case "PurgeQueueInProgress":
		return queue.ErrPurgeInProgress
	case "InvalidParameterValue":
		if aboutReceiptHandle(message) {
			return queue.ErrReceiptInvalid
		}
		return queue.ErrInvalid
	case "InvalidMessageContents", "InvalidAttributeValue", "InvalidAttributeName", "MissingParameter":
		return queue.ErrInvalid
	default:
		switch {
		case strings.Contains(c, "TooLong"):
			return queue.ErrTooLarge
		case strings.HasPrefix(c, "InvalidParameter"):
			return queue.ErrInvalid
		}
	}
	return nil
}

// aboutReceiptHandle reports whether an InvalidParameterValue message is
// about the receipt handle rather than another parameter.
func aboutReceiptHandle(message string) bool {
	return strings.Contains(message, "for parameter ReceiptHandle ") ||
		strings.Contains(message, "not available for visibility timeout change") ||
		strings.Contains(message, "receipt handle has expired")
}

// receiptGone reports an entry failure meaning the receipt handle no longer
// names an in-flight delivery: success for Delete and Release.
func receiptGone(code, message string) bool {
	return portable(code, message) == queue.ErrReceiptInvalid
}

// mapError adds the portable error matching an SQS API error, keeping the
// original in the chain.
func mapError(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if p := portable(ae.ErrorCode(), ae.ErrorMessage()); p != nil {
			return fmt.Errorf("%w: %w", p, err)
		}
	}
	return err
}
