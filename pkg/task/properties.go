package task

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// FormatProperties: the java.util.Properties text format (DuraCloud's
// Java workers' message body).

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
