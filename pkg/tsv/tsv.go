package tsv

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// formulaStarts are the first characters a spreadsheet may take for the
// start of a formula (OWASP, CSV injection), and the quote that marks a
// neutralised cell.
const formulaStarts = "=+-@\t\r'"

// escaped reports whether r is written as \uXXXX: control characters
// other than tab, newline and carriage return, and the bidirectional and
// line-separator characters.
func escaped(r rune) bool {
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f): // C0, DEL, C1
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // embeddings, overrides, isolates
		return true
	case r == 0x200e || r == 0x200f || r == 0x061c: // LRM, RLM, ALM
		return true
	}
	return false
}

// Cell returns s encoded as one cell (see the package doc).
func Cell(s string) string {
	var b strings.Builder
	if s != "" && strings.IndexByte(formulaStarts, s[0]) >= 0 {
		b.WriteByte('\'')
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\x`)
			b.WriteString(hex2(s[i]))
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case escaped(r):
			b.WriteString(`\u`)
			b.WriteString(hex4(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func hex2(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[c>>4], digits[c&0xf]})
}

func hex4(r rune) string {
	return hex2(byte(r>>8)) + hex2(byte(r))
}

// Line returns the cells of fields joined by tabs, with a newline.
func Line(fields ...string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(Cell(f))
	}
	b.WriteByte('\n')
	return b.String()
}

// Unescape returns the value a cell encodes: Unescape(Cell(s)) == s. An
// escape it does not know (none that Cell writes) is kept as it is.
func Unescape(c string) string {
	c = strings.TrimPrefix(c, "'")
	if !strings.ContainsRune(c, '\\') {
		return c
	}
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		if c[i] != '\\' || i+1 == len(c) {
			b.WriteByte(c[i])
			continue
		}
		switch c[i+1] {
		case '\\':
			b.WriteByte('\\')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'x':
			if v, err := strconv.ParseUint(hexAt(c, i+2, 2), 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
			b.WriteString(c[i : i+2])
		case 'u':
			if v, err := strconv.ParseUint(hexAt(c, i+2, 4), 16, 16); err == nil {
				b.WriteRune(rune(v))
				i += 5
				continue
			}
			b.WriteString(c[i : i+2])
		default:
			b.WriteString(c[i : i+2])
		}
		i++
	}
	return b.String()
}

// hexAt returns the n bytes of s at i when they are all hex digits, else "".
func hexAt(s string, i, n int) string {
	if i+n > len(s) {
		return ""
	}
	for _, c := range []byte(s[i : i+n]) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return ""
		}
	}
	return s[i : i+n]
}

// Split splits a line (without its newline) into the values of its cells.
func Split(line string) []string {
	f := strings.Split(line, "\t")
	for i := range f {
		f[i] = Unescape(f[i])
	}
	return f
}
