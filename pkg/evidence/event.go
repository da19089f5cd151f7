package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// EventType is a preservation action Mill records.
type EventType string

// The event types.
const (
	FixityCheck EventType = "fixity check"
	Replication EventType = "replication"
	Deletion    EventType = "deletion"
	// Repair is the replication of a good copy over a damaged one.
	Repair EventType = "repair"
)

// Outcome is an event's outcome.
type Outcome string

// The outcomes (the LoC eventOutcome vocabulary's terms).
const (
	Success Outcome = "success"
	Failure Outcome = "failure"
	Warning Outcome = "warning"
)

// Method is how a fixity check obtained its digest.
type Method string

// The fixity methods.
const (
	// MethodRead: Mill read the copy's bytes back and hashed them.
	MethodRead Method = "read"
	// MethodAtRest: the storage provider computed the digest at rest
	// (e.g. an S3 full-object checksum) and Mill read it.
	MethodAtRest Method = "at-rest"
)

// Algorithm is a digest algorithm.
type Algorithm string

// The digest algorithms.
const (
	MD5       Algorithm = "md5"
	SHA256    Algorithm = "sha256"
	CRC64NVME Algorithm = "crc64nvme" // a local term: no LoC vocabulary lists it
)

// digestLen is each algorithm's digest length in bytes.
var digestLen = map[Algorithm]int{MD5: 16, SHA256: 32, CRC64NVME: 8}

// Copy names one copy of a content item: the item in one store.
type Copy struct {
	Account   string `json:"account"`
	Store     string `json:"store"`
	Space     string `json:"space"`
	ContentID string `json:"contentId"`
}

// Fixity is what a fixity check observed.
type Fixity struct {
	Algorithm Algorithm `json:"algorithm"`
	Digest    string    `json:"digest"`             // lowercase hex; empty when the copy could not be read
	Expected  string    `json:"expected,omitempty"` // the digest Mill held for the item, lowercase hex
	Method    Method    `json:"method"`
}

// AgentKind says whether an agent is Mill's software or a person.
type AgentKind string

// The agent kinds (the LoC agentType vocabulary's terms).
const (
	Software AgentKind = "software"
	Person   AgentKind = "person"
)

// Agent is who took the action: a Workman instance running a Mill version,
// or the operator of a console or millctl action (Name, with the tool as
// Instance and its Version).
type Agent struct {
	Kind     AgentKind `json:"kind"`
	Name     string    `json:"name"`               // "workman", or the operator's user name
	Instance string    `json:"instance,omitempty"` // the Workman instance id, or "millctl" / "console"
	Version  string    `json:"version,omitempty"`  // Mill's version
}

// FormatVersion is the version of the canonical encoding (Event.V).
const FormatVersion = 1

// Event is one preservation action on one copy. Its zero-valued optional
// fields are left out of the canonical bytes.
type Event struct {
	V      int       `json:"v"`
	ID     string    `json:"id"`
	Type   EventType `json:"type"`
	Time   string    `json:"time"` // RFC 3339, UTC, as written by FormatTime
	Object Copy      `json:"object"`
	// Source is the copy read by a replication or repair.
	Source *Copy `json:"source,omitempty"`
	// Fixity is the fixity check's observation (or the one after a repair).
	Fixity  *Fixity `json:"fixity,omitempty"`
	Outcome Outcome `json:"outcome"`
	// Rule is the rule that authorised a deletion (e.g. the policy and
	// clause, or "operator request").
	Rule   string `json:"rule,omitempty"`
	Detail string `json:"detail,omitempty"`
	Agent  Agent  `json:"agent"`
}

// FormatTime is the canonical form of an event time: RFC 3339 in UTC with
// the nanoseconds that are not zero.
func FormatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// EventID derives an event ID from the action's identity (e.g. the task's
// kind and id and the copy): the same parts give the same ID. Parts are
// length-prefixed, so ("ab","c") and ("a","bc") differ.
func EventID(parts ...string) string {
	h := sha256.New()
	h.Write([]byte("mill-evidence-event-id/v1"))
	for _, p := range parts {
		fmt.Fprintf(h, "\x00%d:%s", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Limits of an event's fields.
const (
	maxID    = 128
	maxField = 1024 // any one string
	maxEvent = 16 << 10
)

// Validate checks an event against the model: every field in its
// vocabulary and within its bounds, only valid UTF-8 and no control
// characters (so the canonical bytes are one line), and the fields each
// type needs.
func (e *Event) Validate() error {
	if e.V != FormatVersion {
		return fmt.Errorf("evidence: event version %d, want %d", e.V, FormatVersion)
	}
	if e.ID == "" || len(e.ID) > maxID || strings.IndexFunc(e.ID, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._:-", r))
	}) >= 0 {
		return fmt.Errorf("evidence: event id %q: want 1 to %d of A-Z a-z 0-9 . _ : -", e.ID, maxID)
	}
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil || FormatTime(t) != e.Time {
		return fmt.Errorf("evidence: event %s: time %q is not RFC 3339 UTC as FormatTime writes it", e.ID, e.Time)
	}
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	for name, s := range e.strings() {
		if len(s) > maxField {
			bad("%s is longer than %d bytes", name, maxField)
		} else if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			bad("%s is not valid UTF-8 without control characters", name)
		}
	}
	if err := e.Object.check(); err != nil {
		bad("object: %v", err)
	}
	switch e.Outcome {
	case Success, Failure, Warning:
	default:
		bad("outcome %q: want success, failure or warning", e.Outcome)
	}
	switch e.Agent.Kind {
	case Software, Person:
	default:
		bad("agent kind %q: want software or person", e.Agent.Kind)
	}
	if e.Agent.Name == "" {
		bad("agent name is empty")
	}
	if e.Fixity != nil {
		if err := e.Fixity.check(); err != nil {
			bad("fixity: %v", err)
		}
	}
	switch e.Type {
	case FixityCheck:
		if e.Fixity == nil {
			bad("a fixity check needs its fixity")
		}
		if e.Source != nil || e.Rule != "" {
			bad("a fixity check has no source and no rule")
		}
	case Replication, Repair:
		if e.Source == nil {
			bad("a %s needs its source copy", e.Type)
		} else if err := e.Source.check(); err != nil {
			bad("source: %v", err)
		} else if *e.Source == e.Object {
			bad("a %s's source is its object", e.Type)
		}
		if e.Rule != "" {
			bad("a %s has no rule", e.Type)
		}
	case Deletion:
		if e.Rule == "" {
			bad("a deletion needs the rule that authorised it")
		}
		if e.Source != nil || e.Fixity != nil {
			bad("a deletion has no source and no fixity")
		}
	default:
		bad("type %q: want fixity check, replication, deletion or repair", e.Type)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evidence: event %s: %w", e.ID, err)
	}
	return nil
}

// strings lists the event's free strings by name.
func (e *Event) strings() map[string]string {
	m := map[string]string{
		"object.account": e.Object.Account, "object.store": e.Object.Store, "object.space": e.Object.Space, "object.contentId": e.Object.ContentID,
		"rule": e.Rule, "detail": e.Detail, "agent.name": e.Agent.Name, "agent.instance": e.Agent.Instance, "agent.version": e.Agent.Version,
	}
	if s := e.Source; s != nil {
		m["source.account"], m["source.store"], m["source.space"], m["source.contentId"] = s.Account, s.Store, s.Space, s.ContentID
	}
	return m
}

func (c Copy) check() error {
	if c.Account == "" || c.Store == "" || c.Space == "" || c.ContentID == "" {
		return errors.New("account, store, space and content id are all required")
	}
	return nil
}

func (f *Fixity) check() error {
	n, ok := digestLen[f.Algorithm]
	if !ok {
		return fmt.Errorf("algorithm %q: want md5, sha256 or crc64nvme", f.Algorithm)
	}
	for name, d := range map[string]string{"digest": f.Digest, "expected": f.Expected} {
		if d == "" {
			continue
		}
		if b, err := hex.DecodeString(d); err != nil || len(b) != n || strings.ToLower(d) != d {
			return fmt.Errorf("%s %q: want %d bytes of lowercase hex", name, d, n)
		}
	}
	switch f.Method {
	case MethodRead, MethodAtRest:
	default:
		return fmt.Errorf("method %q: want read or at-rest", f.Method)
	}
	return nil
}

// Canonical returns the event's canonical bytes: compact JSON, the fields
// in the struct's order, no trailing newline. The event must be valid.
func (e *Event) Canonical() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return nil, fmt.Errorf("evidence: encode event %s: %w", e.ID, err)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > maxEvent {
		return nil, fmt.Errorf("evidence: event %s is %d bytes encoded, more than %d", e.ID, len(b), maxEvent)
	}
	return b, nil
}

// ParseCanonical decodes canonical event bytes. It accepts only the
// canonical encoding of a valid event: unknown fields, another field order,
// other spacing or escapes, or an invalid event are errors.
func ParseCanonical(b []byte) (*Event, error) {
	if len(b) > maxEvent {
		return nil, fmt.Errorf("evidence: event of %d bytes, more than %d", len(b), maxEvent)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var e Event
	if err := dec.Decode(&e); err != nil {
		return nil, fmt.Errorf("evidence: decode event: %w", err)
	}
	c, err := e.Canonical()
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(c, b) {
		return nil, fmt.Errorf("evidence: event %s is not in its canonical encoding", e.ID)
	}
	return &e, nil
}
