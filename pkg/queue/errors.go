package queue

import (
	"errors"
	"fmt"
	"time"
)

// ErrReceiptInvalid reports that a receipt handle no longer names an
// in-flight delivery: the message was deleted, or its visibility timeout
// expired and it was (or will be) delivered again under a new handle.
// ChangeVisibility reports it per entry; a consumer extending visibility
// should stop extending that message. Delete and Release never report it
// (a message that is gone is deleted; one no longer in flight is already
// visible). A receipt whose message was deleted is always refused; one whose
// visibility timeout merely expired may still be accepted (moto and
// LocalStack accept it, and SQS documents that an older receipt handle of a
// standard queue can succeed), so a consumer must not rely on
// ErrReceiptInvalid to learn that its delivery timed out.
var ErrReceiptInvalid = errors.New("queue: receipt handle no longer valid")

// ErrInvalid reports an argument outside the contract's limits, such as a
// delay above MaxDelay or a visibility timeout above MaxVisibility.
var ErrInvalid = errors.New("queue: invalid argument")

// CheckDelay returns an error wrapping ErrInvalid unless d, the delay of a
// sent message, is within 0..MaxDelay.
func CheckDelay(d time.Duration) error {
	if d < 0 || d > MaxDelay {
		return fmt.Errorf("delay %v outside 0..%v: %w", d, MaxDelay, ErrInvalid)
	}
	return nil
}
