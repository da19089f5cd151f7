// Package jsonpos reports errors in JSON configuration files (accounts.json,
// duplication policies) as file:line:column, the form editors and CI logs
// understand. It converts encoding/json's byte offsets to positions and
// offers a small token walker that remembers where each value starts, so
// semantic errors (a bad store id, a duplicate key) point at the value too.
//
// Lines and columns are 1-based; columns count bytes, as Go's own tools do.
//
// A configuration file must be UTF-8 without a byte order mark (Check
// refuses anything else rather than let encoding/json replace a bad byte
// with U+FFFD), and is read with a size limit (ReadAll).
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// ErrTooLarge reports a configuration file over the size limit ReadAll was
// given.
var ErrTooLarge = errors.New("file too large")

// ReadAll reads r, the content of file, refusing more than max bytes with
// an error wrapping ErrTooLarge: a configuration file is read whole into
// memory and parsed, so its size is bounded before it is read, not after.
func ReadAll(file string, r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if int64(len(b)) > max {
		return nil, TooLarge(file, max)
	}
	return b, nil
}

// TooLarge returns the error ReadAll gives for a file over max bytes (for
// callers that know the size before reading, such as from an S3 HEAD).
func TooLarge(file string, max int64) error {
	return fmt.Errorf("%s: larger than the %d-byte limit for configuration files: %w", file, max, ErrTooLarge)
}

// Error is one problem at a position of a named file.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Position returns the 1-based line and byte column of offset off in data.
// An offset past the end is the position just after the last byte.
func Position(data []byte, off int64) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	before := data[:off]
	line = 1 + bytes.Count(before, []byte{'\n'})
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// At returns an *Error at offset off of data.
func At(file string, data []byte, off int64, format string, args ...any) *Error {
	l, c := Position(data, off)
	return &Error{File: file, Line: l, Col: c, Msg: fmt.Sprintf(format, args...)}
}

// bom is the UTF-8 encoding of U+FEFF, the byte order mark.
const bom = "\xef\xbb\xbf"

// Check reports whether data is one syntactically valid JSON value in
// UTF-8 without a byte order mark; if not it returns an *Error positioned at
// the offending byte (for a trailing comma, the comma).
func Check(file string, data []byte) error {
	if strings.HasPrefix(string(data), bom) {
		return At(file, data, 0, "the file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without one")
	}
	if !utf8.Valid(data) {
		off := invalidUTF8(data)
		return At(file, data, int64(off), "invalid UTF-8 (byte 0x%02x); the file must be UTF-8", data[off])
	}
	var v any
	err := json.Unmarshal(data, &v)
	if err == nil {
		return nil
	}
	return FromJSON(file, data, err)
}

// invalidUTF8 returns the offset of the first byte of data that is not
// part of a valid UTF-8 sequence.
func invalidUTF8(data []byte) int {
	for off := 0; off < len(data); {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n == 1 {
			return off
		}
		off += n
	}
	return len(data)
}

// FromJSON converts an encoding/json error about data into an *Error. A
// *json.SyntaxError counts the bad byte in its Offset, so the position is
// the byte before it (the end of input for "unexpected end"), except that a
// ']' or '}' right after a comma (whitespace aside) is reported as a
// trailing comma at the comma, where the mistake is; a
// *json.UnmarshalTypeError's Offset is the end of the value read. Other
// errors are returned unchanged, prefixed with the file name.
func FromJSON(file string, data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off := se.Offset - 1
		if off < 0 || strings.HasPrefix(se.Error(), "unexpected end") {
			off = se.Offset
		}
		if c, ok := trailingComma(data, off); ok {
			return At(file, data, c, "trailing comma before '%c'", data[off])
		}
		return At(file, data, off, "%s", se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return At(file, data, te.Offset, "%s", te.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return At(file, data, int64(len(data)), "unexpected end of JSON input")
	}
	return fmt.Errorf("%s: %w", file, err)
}

// trailingComma reports whether the byte at off closes an array or object
// right after a comma, and where that comma is.
func trailingComma(data []byte, off int64) (int64, bool) {
	if off < 0 || off >= int64(len(data)) || (data[off] != ']' && data[off] != '}') {
		return 0, false
	}
	i := off - 1
	for i >= 0 && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i--
	}
	if i >= 0 && data[i] == ',' {
		return i, true
	}
	return 0, false
}

// Walker reads one JSON document token by token and knows where the next
// value starts. Use it on data that Check accepted: it then never meets a
// syntax error, only shapes the caller rejects.
type Walker struct {
	File string
	Data []byte
	dec  *json.Decoder
}

// NewWalker returns a walker over data.
func NewWalker(file string, data []byte) *Walker {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return &Walker{File: file, Data: data, dec: d}
}

// Next returns the offset at which the next token starts.
func (w *Walker) Next() int64 {
	off := w.dec.InputOffset()
	for off < int64(len(w.Data)) {
		switch w.Data[off] {
		case ' ', '\t', '\n', '\r', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

// Errorf returns an *Error at offset off.
func (w *Walker) Errorf(off int64, format string, args ...any) *Error {
	return At(w.File, w.Data, off, format, args...)
}

// Token returns the next token and the offset where it starts.
func (w *Walker) Token() (json.Token, int64, error) {
	off := w.Next()
	t, err := w.dec.Token()
	if err != nil {
		return nil, off, FromJSON(w.File, w.Data, err)
	}
	return t, off, nil
}

// More reports whether the current array or object has another element.
func (w *Walker) More() bool { return w.dec.More() }

// Skip consumes the next value whatever it is.
func (w *Walker) Skip() error {
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return FromJSON(w.File, w.Data, err)
	}
	return nil
}

// Delim reads the next token and requires it to be the delimiter d ('{' or
// '['); what names the expected value in the error.
func (w *Walker) Delim(d json.Delim, what string) (int64, error) {
	t, off, err := w.Token()
	if err != nil {
		return off, err
	}
	if got, ok := t.(json.Delim); !ok || got != d {
		kind := "an object"
		if d == '[' {
			kind = "an array"
		}
		return off, w.Errorf(off, "%s must be %s, not %s", what, kind, Describe(t))
	}
	return off, nil
}

// String reads the next token and requires a string.
func (w *Walker) String(what string) (string, int64, error) {
	t, off, err := w.Token()
	if err != nil {
		return "", off, err
	}
	s, ok := t.(string)
	if !ok {
		if d, isDelim := t.(json.Delim); isDelim {
			// Consume the rest of the container so walking can go on.
			_ = w.skipRest(d)
		}
		return "", off, w.Errorf(off, "%s must be a string, not %s", what, Describe(t))
	}
	return s, off, nil
}

// Bool reads the next token and requires a boolean.
func (w *Walker) Bool(what string) (bool, int64, error) {
	t, off, err := w.Token()
	if err != nil {
		return false, off, err
	}
	b, ok := t.(bool)
	if !ok {
		if d, isDelim := t.(json.Delim); isDelim {
			_ = w.skipRest(d)
		}
		return false, off, w.Errorf(off, "%s must be true or false, not %s", what, Describe(t))
	}
	return b, off, nil
}

// End reads the closing delimiter of the current container.
func (w *Walker) End() error {
	_, _, err := w.Token()
	return err
}

// skipRest consumes the remainder of a container whose opening delimiter d
// was just read.
func (w *Walker) skipRest(d json.Delim) error {
	if d != '{' && d != '[' {
		return nil
	}
	for w.dec.More() {
		if d == '{' {
			if _, _, err := w.Token(); err != nil { // key
				return err
			}
		}
		if err := w.Skip(); err != nil {
			return err
		}
	}
	return w.End()
}

// SkipRest consumes the rest of the container just opened with d.
func (w *Walker) SkipRest(d json.Delim) error { return w.skipRest(d) }

// Describe names the kind of a token for error messages.
func Describe(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return fmt.Sprintf("%q", string(v))
	case string:
		return fmt.Sprintf("the string %q", v)
	case json.Number:
		return "the number " + v.String()
	case bool:
		return fmt.Sprintf("%t", v)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", t)
}

// EndDocument reads the closing delimiter of the top-level container and
// requires that nothing but whitespace follows it: the last step of a
// document's parse.
func (w *Walker) EndDocument() error {
	if err := w.End(); err != nil {
		return err
	}
	return w.EndOfDocument()
}

// EndOfDocument requires that nothing but whitespace follows the value read.
func (w *Walker) EndOfDocument() error {
	off := w.Next()
	if off < int64(len(w.Data)) {
		return w.Errorf(off, "unexpected data after the top-level value")
	}
	return nil
}

// Sort orders errors by position, stably; errors that are not *Error go
// last in their original order.
func Sort(errs []error) {
	sort.SliceStable(errs, func(i, j int) bool {
		a, aok := errs[i].(*Error)
		b, bok := errs[j].(*Error)
		if !aok || !bok {
			return aok && !bok
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}
