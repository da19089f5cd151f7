package workman

import (
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
)

// The dead-letter format is pkg/deadletter's, shared with the tools that
// read the dead-letter queue; these are the names the manager and its
// tests use.
type DeadLetter = deadletter.Letter

// Reasons a task is dead-lettered (DeadLetter.Reason).
const (
	ReasonFailed      = deadletter.ReasonFailed
	ReasonPermanent   = deadletter.ReasonPermanent
	ReasonUndecodable = deadletter.ReasonUndecodable
	ReasonUnknownType = deadletter.ReasonUnknownType
)

// Message attributes and forms of a dead letter (see pkg/deadletter).
const (
	AttrForm           = deadletter.AttrForm
	AttrReason         = deadletter.AttrReason
	AttrError          = deadletter.AttrError
	FormEnvelope       = deadletter.FormEnvelope
	FormRaw            = deadletter.FormRaw
	MaxDeadLetterError = deadletter.MaxError
)

// ErrNotDeadLetter is deadletter.ErrUnknownForm.
var ErrNotDeadLetter = deadletter.ErrUnknownForm

// EncodeDeadLetter is deadletter.Encode.
func EncodeDeadLetter(d *DeadLetter) (queue.SendEntry, error) { return deadletter.Encode(d) }

// EncodeDeadLetterRaw is deadletter.EncodeRaw.
func EncodeDeadLetterRaw(d *DeadLetter) queue.SendEntry { return deadletter.EncodeRaw(d) }

// DecodeDeadLetter is deadletter.Decode.
func DecodeDeadLetter(m *queue.Message) (*DeadLetter, error) { return deadletter.Decode(m) }
