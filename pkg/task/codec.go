package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Format is a wire format of a task message body.
type Format int

// Wire formats.
const (
	// FormatJSON is Mill's versioned JSON envelope:
	//
	//	{"v":1,"type":"DUP","attempts":0,"props":{"account":"acme",…}}
	FormatJSON Format = iota
	// FormatProperties is the java.util.Properties text that DuraCloud
	// writes on its queues: a "#" date comment line, then key=value lines,
	// with the type under the key "type" and the attempts under "attempts".
	FormatProperties
)

// JSONVersion is the envelope version FormatJSON writes and the only one
// Decode accepts.
const JSONVersion = 1

// Keys that carry a task's type and attempts in FormatProperties. They are
// reserved: a Task's Props must not contain them.
const (
	KeyType     = "type"
	KeyAttempts = "attempts"
)

// ErrMalformed is wrapped by every error Decode returns.
var ErrMalformed = errors.New("task: malformed message")

// DecodeError describes why a message body could not be decoded. It wraps
// ErrMalformed.
type DecodeError struct {
	Format Format
	// Line is the 1-based line of a FormatProperties body where the problem
	// starts (for a continued line, its first line); 0 when no single line
	// is at fault.
	Line int
	Msg  string
}

func (e *DecodeError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%v: %s line %d: %s", ErrMalformed, e.Format, e.Line, e.Msg)
	}
	return fmt.Sprintf("%v: %s: %s", ErrMalformed, e.Format, e.Msg)
}

// Unwrap returns ErrMalformed.
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// String returns the name ParseFormat accepts: "json" or "properties".
func (f Format) String() string {
	switch f {
	case FormatJSON:
		return "json"
	case FormatProperties:
		return "properties"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// Validate returns an error unless f is one of the wire formats.
func (f Format) Validate() error {
	if f != FormatJSON && f != FormatProperties {
		return fmt.Errorf("task: unknown format %v (want json or properties)", f)
	}
	return nil
}

// ParseFormat parses a format name: "json" or "properties" (case-insensitive).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "json":
		return FormatJSON, nil
	case "properties":
		return FormatProperties, nil
	}
	return 0, fmt.Errorf("task: unknown format %q (want json or properties)", s)
}

// EncodeOptions tunes Encode. The zero value is what Encode uses.
type EncodeOptions struct {
	// Now gives the time written in the date comment line of
	// FormatProperties; nil means time.Now. Tests set it for stable output.
	Now func() time.Time
}

// Encode returns the message body of t in format f. See EncodeOptions.Encode.
func Encode(t *Task, f Format) ([]byte, error) {
	return EncodeOptions{}.Encode(t, f)
}

// Encode returns the message body of t in format f.
//
// The output is deterministic apart from the FormatProperties date comment:
// keys are sorted. It is safe to send on SQS, whose bodies may hold only
// #x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF: other
// characters in property values or keys are escaped (JSON: \u00XX, \ufffe,
// \uffff; properties: \t \n \r \f short escapes, \uXXXX for the rest).
// Non-ASCII text is written raw as UTF-8 in both formats.
//
// Encode fails when t is nil, its type is empty, its attempts are negative,
// any key or value (or the type) is not valid UTF-8, or Props holds a
// reserved key (KeyType, KeyAttempts).
func (o EncodeOptions) Encode(t *Task, f Format) ([]byte, error) {
	if err := checkEncodable(t); err != nil {
		return nil, err
	}
	switch f {
	case FormatJSON:
		return encodeJSON(t)
	case FormatProperties:
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		return encodeProperties(t, now()), nil
	}
	return nil, fmt.Errorf("task: encode %s: unknown format %v", t.Type, f)
}

func checkEncodable(t *Task) error {
	if t == nil {
		return errors.New("task: encode: nil task")
	}
	if t.Type == "" {
		return errors.New("task: encode: empty task type")
	}
	if !utf8.ValidString(string(t.Type)) {
		return fmt.Errorf("task: encode: task type %q: invalid UTF-8", string(t.Type))
	}
	if t.Attempts < 0 {
		return fmt.Errorf("task: encode %s: negative attempts %d", t.Type, t.Attempts)
	}
	for k, v := range t.Props {
		if k == KeyType || k == KeyAttempts {
			return fmt.Errorf("task: encode %s: property %q is reserved", t.Type, k)
		}
		if !utf8.ValidString(k) {
			return fmt.Errorf("task: encode %s: property key %q: invalid UTF-8", t.Type, k)
		}
		if !utf8.ValidString(v) {
			return fmt.Errorf("task: encode %s: property %q: invalid UTF-8 in value", t.Type, k)
		}
	}
	return nil
}

// Decode decodes a message body in either format: a body whose first
// non-whitespace byte is '{' is FormatJSON, anything else FormatProperties.
// Every error wraps ErrMalformed (and is a *DecodeError). Unknown task types
// decode fine; Type.Known tells them apart. The returned Props is never nil.
// S3 event notification bodies decode to AUDIT (or, for s3:TestEvent, NOOP)
// tasks: see KeyS3Event.
func Decode(b []byte) (*Task, error) {
	f := DetectFormat(b)
	if !utf8.Valid(b) {
		return nil, &DecodeError{Format: f, Msg: "invalid UTF-8"}
	}
	if f == FormatJSON {
		if t, ok := decodeS3Notification(b); ok {
			return t, nil
		}
		return decodeJSON(b)
	}
	return decodeProperties(b)
}

// DetectFormat reports the format Decode would read b as: FormatJSON when
// the first byte that is not a space, tab, CR, LF or form feed is '{',
// FormatProperties otherwise.
func DetectFormat(b []byte) Format {
	trimmed := bytes.TrimLeft(b, " \t\r\n\f")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return FormatJSON
	}
	return FormatProperties
}

// ---- JSON ----

type envelope struct {
	V        *int              `json:"v"`
	Type     string            `json:"type"`
	Attempts int               `json:"attempts"`
	Props    map[string]string `json:"props"`
}

func encodeJSON(t *Task) ([]byte, error) {
	v := JSONVersion
	env := envelope{V: &v, Type: string(t.Type), Attempts: t.Attempts, Props: t.Props}
	if env.Props == nil {
		env.Props = map[string]string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		return nil, fmt.Errorf("task: encode %s: json: %w", t.Type, err)
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	// encoding/json escapes control characters but writes U+FFFE and
	// U+FFFF raw; SQS refuses them. They can only occur inside strings.
	out = bytes.ReplaceAll(out, []byte("\uFFFE"), []byte(`\ufffe`))
	out = bytes.ReplaceAll(out, []byte("\uFFFF"), []byte(`\uffff`))
	return out, nil
}

func decodeJSON(b []byte) (*Task, error) {
	bad := func(format string, args ...any) error {
		return &DecodeError{Format: FormatJSON, Msg: fmt.Sprintf(format, args...)}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var env envelope
	if err := dec.Decode(&env); err != nil {
		return nil, bad("%v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, bad("unexpected data after the envelope")
	}
	switch {
	case env.V == nil:
		return nil, bad("missing envelope version \"v\"")
	case *env.V != JSONVersion:
		return nil, bad("unsupported envelope version %d (this build reads version %d)", *env.V, JSONVersion)
	case env.Type == "":
		return nil, bad("missing task type")
	case env.Attempts < 0:
		return nil, bad("negative attempts %d", env.Attempts)
	}
	for k := range env.Props {
		if k == KeyType || k == KeyAttempts {
			return nil, bad("property %q is reserved", k)
		}
	}
	if env.Props == nil {
		env.Props = map[string]string{}
	}
	return &Task{Type: Type(env.Type), Attempts: env.Attempts, Props: env.Props}, nil
}
