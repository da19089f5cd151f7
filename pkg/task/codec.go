package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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

// ---- java.util.Properties ----

// javaDateLayout is java.util.Date.toString's layout, which
// Properties.store writes as its first comment line.
const javaDateLayout = "Mon Jan 02 15:04:05 MST 2006"

func encodeProperties(t *Task, now time.Time) []byte {
	all := make(map[string]string, len(t.Props)+2)
	for k, v := range t.Props {
		all[k] = v
	}
	all[KeyType] = string(t.Type)
	if t.Attempts != 0 {
		all[KeyAttempts] = strconv.Itoa(t.Attempts)
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)

	var b strings.Builder
	b.WriteString("#")
	b.WriteString(now.UTC().Format(javaDateLayout))
	b.WriteString("\n")
	for _, k := range keys {
		escapeProperty(&b, k, true)
		b.WriteByte('=')
		escapeProperty(&b, all[k], false)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// escapeProperty writes s escaped as Properties.store does (to a Writer, so
// non-ASCII stays raw), and also escapes as \uXXXX the characters SQS
// refuses. Spaces are escaped everywhere in keys and only in first position
// in values.
func escapeProperty(b *strings.Builder, s string, key bool) {
	for i, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case ' ':
			if i == 0 || key {
				b.WriteByte('\\')
			}
			b.WriteByte(' ')
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\f':
			b.WriteString(`\f`)
		case '=', ':', '#', '!':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			if r < 0x20 || r == 0xFFFE || r == 0xFFFF {
				fmt.Fprintf(b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
}

func decodeProperties(b []byte) (*Task, error) {
	t := &Task{Props: map[string]string{}}
	typeLine, attemptsLine := 0, 0
	var attempts string
	for _, ll := range logicalLines(string(b)) {
		k, v, err := splitProperty(ll.text)
		if err != nil {
			return nil, &DecodeError{Format: FormatProperties, Line: ll.line, Msg: err.Error()}
		}
		switch k {
		case KeyType:
			t.Type, typeLine = Type(v), ll.line
		case KeyAttempts:
			attempts, attemptsLine = v, ll.line
		default:
			t.Props[k] = v
		}
	}
	if typeLine == 0 {
		return nil, &DecodeError{Format: FormatProperties, Msg: `missing property "type"`}
	}
	if t.Type == "" {
		return nil, &DecodeError{Format: FormatProperties, Line: typeLine, Msg: `empty property "type"`}
	}
	if attemptsLine != 0 {
		n, err := strconv.Atoi(attempts)
		if err != nil || n < 0 {
			return nil, &DecodeError{Format: FormatProperties, Line: attemptsLine,
				Msg: fmt.Sprintf("property \"attempts\": not a non-negative integer: %q", attempts)}
		}
		t.Attempts = n
	}
	return t, nil
}

type logicalLine struct {
	text string
	line int // 1-based number of its first natural line
}

// logicalLines splits s as java.util.Properties.load does: natural lines end
// with LF, CR or CRLF; leading whitespace (space, tab, form feed) is dropped;
// blank lines and lines whose first non-blank character is '#' or '!' are
// comments; a line ending in an odd number of backslashes continues on the
// next natural line, whose leading whitespace is dropped.
func logicalLines(s string) []logicalLine {
	natural := splitNatural(s)
	var out []logicalLine
	for i := 0; i < len(natural); i++ {
		l := trimBlank(natural[i])
		if l == "" || l[0] == '#' || l[0] == '!' {
			continue
		}
		start := i + 1
		var text strings.Builder
		for {
			if !oddTrailingBackslashes(l) {
				text.WriteString(l)
				break
			}
			text.WriteString(l[:len(l)-1])
			if i+1 >= len(natural) {
				break // a continuation at the end of input is dropped
			}
			i++
			l = trimBlank(natural[i])
		}
		out = append(out, logicalLine{text: text.String(), line: start})
	}
	return out
}

func splitNatural(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i])
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
	return out
}

func trimBlank(s string) string { return strings.TrimLeft(s, " \t\f") }

func oddTrailingBackslashes(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitProperty splits one logical line into its unescaped key and value.
// The key ends at the first unescaped '=', ':' or whitespace; whitespace
// around the separator, and one '=' or ':' after whitespace, are dropped.
func splitProperty(line string) (key, value string, err error) {
	keyLen, valueStart := 0, len(line)
	hasSep, escaped := false, false
	for ; keyLen < len(line); keyLen++ {
		c := line[keyLen]
		if !escaped && (c == '=' || c == ':') {
			valueStart, hasSep = keyLen+1, true
			break
		}
		if !escaped && (c == ' ' || c == '\t' || c == '\f') {
			valueStart = keyLen + 1
			break
		}
		escaped = c == '\\' && !escaped
	}
	for ; valueStart < len(line); valueStart++ {
		c := line[valueStart]
		if c == ' ' || c == '\t' || c == '\f' {
			continue
		}
		if !hasSep && (c == '=' || c == ':') {
			hasSep = true
			continue
		}
		break
	}
	if key, err = unescapeProperty(line[:keyLen]); err != nil {
		return "", "", fmt.Errorf("key: %w", err)
	}
	if value, err = unescapeProperty(line[valueStart:]); err != nil {
		return "", "", fmt.Errorf("property %q: %w", key, err)
	}
	return key, value, nil
}

// unescapeProperty resolves .properties escapes: \t \n \r \f, \uXXXX (UTF-16
// code units; a surrogate pair makes one character, a lone surrogate is an
// error), and backslash before any other character stands for that
// character.
func unescapeProperty(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(s) {
			break
		}
		switch c = s[i]; c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			u, err := hex4(s, i+1)
			if err != nil {
				return "", err
			}
			i += 4
			switch {
			case u >= 0xD800 && u < 0xDC00:
				lo, err := hex4(s, i+3)
				if err != nil || i+2 >= len(s) || s[i+1] != '\\' || s[i+2] != 'u' || lo < 0xDC00 || lo > 0xDFFF {
					return "", fmt.Errorf("unpaired surrogate \\u%04X", u)
				}
				i += 6
				b.WriteRune(0x10000 + (rune(u)-0xD800)<<10 + (rune(lo) - 0xDC00))
			case u >= 0xDC00 && u <= 0xDFFF:
				return "", fmt.Errorf("unpaired surrogate \\u%04X", u)
			default:
				b.WriteRune(rune(u))
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// hex4 parses the four hex digits of a \uXXXX escape starting at s[i].
func hex4(s string, i int) (uint16, error) {
	if i+4 > len(s) {
		return 0, fmt.Errorf("malformed \\uXXXX escape %q", "\\u"+s[min(i, len(s)):])
	}
	var n uint16
	for _, c := range []byte(s[i : i+4]) {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, fmt.Errorf("malformed \\uXXXX escape %q", "\\u"+s[i:i+4])
		}
		n = n<<4 | uint16(d)
	}
	return n, nil
}
