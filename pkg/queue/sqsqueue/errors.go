package sqsqueue

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/pkg/queue"
)

// SQS error codes with a portable meaning.
const (
	codeReceiptInvalid = "ReceiptHandleIsInvalid"
	codeNotInflight    = "AWS.SimpleQueueService.MessageNotInflight"
	codeNotInflight2   = "MessageNotInflight"
)

// EntryError is one failed entry of an SQS batch call. errors.Is matches the
// portable queue error its code means (queue.ErrTooLarge,
// queue.ErrReceiptInvalid, queue.ErrInvalid).
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
func (e *EntryError) Unwrap() error { return portable(e.Code) }

func portable(code string) error {
	switch {
	case code == codeReceiptInvalid || code == codeNotInflight || code == codeNotInflight2 ||
		code == "InvalidReceiptHandle":
		return queue.ErrReceiptInvalid
	case strings.Contains(code, "TooLong"):
		return queue.ErrTooLarge
	case code == "QueueDoesNotExist" || code == "AWS.SimpleQueueService.NonExistentQueue":
		return queue.ErrNotFound
	case strings.HasPrefix(code, "InvalidParameter") || code == "InvalidMessageContents" ||
		code == "InvalidAttributeValue" || code == "InvalidAttributeName":
		return queue.ErrInvalid
	}
	return nil
}

// receiptGone reports codes meaning the receipt handle no longer names an
// in-flight delivery: success for Delete and Release.
func receiptGone(code string) bool { return portable(code) == queue.ErrReceiptInvalid }

// mapError adds the portable error matching an SQS API error, keeping the
// original in the chain.
func mapError(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		if p := portable(ae.ErrorCode()); p != nil {
			return fmt.Errorf("%w: %w", p, err)
		}
	}
	return err
}
