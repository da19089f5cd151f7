package deadletter

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// Reasons a task is dead-lettered (Letter.Reason).
const (
	ReasonFailed      = "failed"       // failed MaxAttempts times
	ReasonPermanent   = "permanent"    // a Permanent error, or a refused claim-check reference
	ReasonUndecodable = "undecodable"  // the body is not a task
	ReasonUnknownType = "unknown_type" // a task type Mill does not know
)

// Version is the envelope version Encode writes.
const Version = 1

// MaxError is the longest error text kept in a dead letter; a
// longer one is cut (with a marker).
const MaxError = 8 << 10

// Message attributes of a dead-letter message. AttrForm says where the
// original body is: FormEnvelope (the body is the JSON envelope below) or
// FormRaw (the body is the original body itself and the metadata travels
// only in the attributes — used when the envelope would exceed the queue's
// size limit). The other attributes repeat the metadata so operators can
// filter without parsing bodies.
const (
	AttrForm        = "mill-dlq-form"
	AttrReason      = "mill-dlq-reason"
	AttrError       = "mill-dlq-error"
	AttrTaskType    = "mill-dlq-task-type"
	AttrProcessor   = "mill-dlq-processor"
	AttrSourceQueue = "mill-dlq-source-queue"
	AttrAttempts    = "mill-dlq-attempts"
	AttrWorker      = "mill-dlq-worker"
	AttrTime        = "mill-dlq-time"
	AttrMessageID   = "mill-dlq-message-id"

	FormEnvelope = "envelope"
	FormRaw      = "raw"
)

// maxAttrError bounds the error text repeated in AttrError.
const maxAttrError = 1 << 10

// Letter is a task Workman gave up on, as it sits on the dead-letter
// queue.
//
// Wire format (version 1). The message body is a JSON envelope:
//
//	{
//	  "mill_dead_letter": 1,
//	  "reason": "failed",                 // failed | permanent | undecodable | unknown_type
//	  "error": "dup: copy: …",            // the last error (at most 8 KiB)
//	  "task_type": "DUP",                 // "" when undecodable
//	  "processor": "dup",                 // the processor that failed, if any
//	  "source_queue": "mill-dup-high",
//	  "attempts": 3,                      // failed attempts, this one included
//	  "worker": "ip-10-0-0-7-4121",
//	  "time": "2026-01-01T00:00:00Z",     // when it was dead-lettered (RFC 3339, UTC)
//	  "message_id": "…",                  // the source message's ID
//	  "receive_count": 1,                 // its ApproximateReceiveCount
//	  "body": "{\"v\":1,…}"               // the original body, byte for byte
//	}
//
// "body" holds the original body as a JSON string when it is valid UTF-8
// (SQS bodies always are); otherwise "body_base64" holds it base64-encoded.
// Either way Decode returns exactly the bytes that were received,
// so a redrive can put them back unchanged.
//
// The message also carries the metadata as string message attributes
// (Attr* constants; AttrForm = "envelope"). When the envelope would be too
// large for the queue, the manager sends the original body itself as the
// message body with AttrForm = "raw" and the metadata only in the
// attributes (the error cut to 1 KiB). Decode reads both forms.
type Letter struct {
	Body         []byte    // the original message body, untouched
	Reason       string    // Reason* constant
	Error        string    // the error that sent the task here
	TaskType     task.Type // "" when the body could not be decoded
	Processor    string
	SourceQueue  string
	Attempts     int
	Worker       string
	Time         time.Time
	MessageID    string
	ReceiveCount int
}

type deadLetterJSON struct {
	Version      int       `json:"mill_dead_letter"`
	Reason       string    `json:"reason"`
	Error        string    `json:"error"`
	TaskType     task.Type `json:"task_type,omitempty"`
	Processor    string    `json:"processor,omitempty"`
	SourceQueue  string    `json:"source_queue"`
	Attempts     int       `json:"attempts"`
	Worker       string    `json:"worker"`
	Time         time.Time `json:"time"`
	MessageID    string    `json:"message_id,omitempty"`
	ReceiveCount int       `json:"receive_count,omitempty"`
	Body         *string   `json:"body,omitempty"`
	BodyBase64   string    `json:"body_base64,omitempty"`
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) && len(s) > 0 { // do not split a rune
		s = s[:len(s)-1]
	}
	return s + " …[cut]"
}

// Attributes returns the metadata as message attributes (AttrForm not set).
func (d *Letter) Attributes() map[string]string {
	a := map[string]string{
		AttrReason:      d.Reason,
		AttrError:       cut(d.Error, maxAttrError),
		AttrSourceQueue: d.SourceQueue,
		AttrAttempts:    strconv.Itoa(d.Attempts),
		AttrWorker:      d.Worker,
		AttrTime:        d.Time.UTC().Format(time.RFC3339Nano),
	}
	if d.TaskType != "" {
		a[AttrTaskType] = string(d.TaskType)
	}
	if d.Processor != "" {
		a[AttrProcessor] = d.Processor
	}
	if d.MessageID != "" {
		a[AttrMessageID] = d.MessageID
	}
	for k, v := range a {
		if v == "" {
			delete(a, k) // SQS rejects empty attribute values
		}
	}
	return a
}

// Encode returns the envelope form of d as a message to send.
func Encode(d *Letter) (queue.SendEntry, error) {
	j := deadLetterJSON{
		Version: Version, Reason: d.Reason, Error: cut(d.Error, MaxError),
		TaskType: d.TaskType, Processor: d.Processor, SourceQueue: d.SourceQueue,
		Attempts: d.Attempts, Worker: d.Worker, Time: d.Time.UTC(), MessageID: d.MessageID,
		ReceiveCount: d.ReceiveCount,
	}
	if utf8.Valid(d.Body) {
		s := string(d.Body)
		j.Body = &s
	} else {
		j.BodyBase64 = base64.StdEncoding.EncodeToString(d.Body)
	}
	b, err := json.Marshal(j)
	if err != nil {
		return queue.SendEntry{}, fmt.Errorf("deadletter: encode dead letter: %w", err)
	}
	a := d.Attributes()
	a[AttrForm] = FormEnvelope
	return queue.SendEntry{Body: b, Attributes: a}, nil
}

// EncodeRaw returns the raw form of d: the original body as the
// message body and the metadata in the attributes only.
func EncodeRaw(d *Letter) queue.SendEntry {
	a := d.Attributes()
	a[AttrForm] = FormRaw
	return queue.SendEntry{Body: d.Body, Attributes: a}
}

// ErrUnknownForm is returned by Decode for a message that is in
// neither dead-letter form.
var ErrUnknownForm = errors.New("deadletter: not a dead-letter message")

// Decode reads a message from the dead-letter queue in either
// form. A message the SQS redrive policy moved there (a crash loop, not a
// workman decision) is in neither form: it returns ErrUnknownForm, and
// the message body is the original body.
func Decode(m *queue.Message) (*Letter, error) {
	if m.Attributes[AttrForm] == FormRaw {
		return fromAttributes(m), nil
	}
	var j deadLetterJSON
	if err := json.Unmarshal(m.Body, &j); err != nil || j.Version == 0 {
		return nil, ErrUnknownForm
	}
	if j.Version != Version {
		return nil, fmt.Errorf("deadletter: dead letter version %d: unsupported", j.Version)
	}
	d := &Letter{
		Reason: j.Reason, Error: j.Error, TaskType: j.TaskType, Processor: j.Processor,
		SourceQueue: j.SourceQueue, Attempts: j.Attempts, Worker: j.Worker, Time: j.Time,
		MessageID: j.MessageID, ReceiveCount: j.ReceiveCount,
	}
	switch {
	case j.Body != nil:
		d.Body = []byte(*j.Body)
	case j.BodyBase64 != "":
		b, err := base64.StdEncoding.DecodeString(j.BodyBase64)
		if err != nil {
			return nil, fmt.Errorf("deadletter: dead letter body_base64: %w", err)
		}
		d.Body = b
	default:
		d.Body = []byte{}
	}
	return d, nil
}

func fromAttributes(m *queue.Message) *Letter {
	a := m.Attributes
	n, _ := strconv.Atoi(a[AttrAttempts])
	tm, _ := time.Parse(time.RFC3339Nano, a[AttrTime])
	return &Letter{
		Body: m.Body, Reason: a[AttrReason], Error: a[AttrError], TaskType: task.Type(a[AttrTaskType]),
		Processor: a[AttrProcessor], SourceQueue: a[AttrSourceQueue], Attempts: n, Worker: a[AttrWorker],
		Time: tm, MessageID: a[AttrMessageID],
	}
}
