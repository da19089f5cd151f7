package bit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ErrFilter is wrapped by every error of ParseFilter and LoadFilter.
var ErrFilter = errors.New("bit: bad filter")

// Pattern is one line of a filter file: three segments (account, store,
// space), each an exact name, "*" (anything) or "prefix*" (names starting
// with prefix).
type Pattern struct {
	Account, Store, Space string
	// Source is where the pattern came from ("file:line").
	Source string
}

func (p Pattern) String() string { return "/" + p.Account + "/" + p.Store + "/" + p.Space }

// segMatch reports whether name matches one pattern segment.
func segMatch(seg, name string) bool {
	if prefix, ok := strings.CutSuffix(seg, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return seg == name
}

// Match reports whether the pattern matches the space.
func (p Pattern) Match(account, store, space string) bool {
	return segMatch(p.Account, account) && segMatch(p.Store, store) && segMatch(p.Space, space)
}

// Patterns is a parsed filter file: a space matches it when it matches any
// of its patterns.
type Patterns []Pattern

// Match reports whether any pattern matches the space.
func (ps Patterns) Match(account, store, space string) bool {
	for _, p := range ps {
		if p.Match(account, store, space) {
			return true
		}
	}
	return false
}

// ParseFilter parses a filter file. The format, one pattern per line:
//
//	# comment (a line whose first non-blank character is '#')
//	/account/store/space
//	/acme/*/*          every space of every store of acme
//	/acme/1/photo*     spaces of acme's store 1 starting with "photo"
//
// Blank lines and comment lines are ignored, as is white space around a
// pattern. A pattern has exactly three non-empty segments after a leading
// '/'; a segment is an exact name, "*", or "prefix*" ('*' only as the last
// character). Every invalid line is reported, each with name:line, in one
// error wrapping ErrFilter.
func ParseFilter(name string, r io.Reader) (Patterns, error) {
	var ps Patterns
	var errs []error
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p, err := parsePattern(line)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: %s:%d: %q: %s", ErrFilter, name, n, line, err))
			continue
		}
		p.Source = fmt.Sprintf("%s:%d", name, n)
		ps = append(ps, p)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%w: %s: %v", ErrFilter, name, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ps, nil
}

func parsePattern(line string) (Pattern, error) {
	rest, ok := strings.CutPrefix(line, "/")
	if !ok {
		return Pattern{}, errors.New("a pattern starts with '/' (/account/store/space)")
	}
	segs := strings.Split(rest, "/")
	if len(segs) != 3 {
		return Pattern{}, fmt.Errorf("%d segments; a pattern has three (/account/store/space)", len(segs))
	}
	for i, s := range segs {
		what := [3]string{"account", "store", "space"}[i]
		switch {
		case s == "":
			return Pattern{}, fmt.Errorf("empty %s segment", what)
		case strings.ContainsAny(strings.TrimSuffix(s, "*"), "*"):
			return Pattern{}, fmt.Errorf("%s segment %q: '*' is allowed only at the end", what, s)
		case strings.ContainsAny(s, " \t"):
			return Pattern{}, fmt.Errorf("%s segment %q contains white space", what, s)
		}
	}
	return Pattern{Account: segs[0], Store: segs[1], Space: segs[2]}, nil
}

// LoadFilter reads and parses a filter file.
func LoadFilter(path string) (Patterns, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFilter, err)
	}
	return ParseFilter(path, bytes.NewReader(b))
}

// Filter selects the spaces a run checks: with Include nil every space is
// included; otherwise only spaces matching an inclusion pattern. A space
// matching an exclusion pattern is left out whatever Include says
// (exclusion wins).
type Filter struct {
	Include Patterns // nil: include everything
	Exclude Patterns
}

// Space reports whether the space is checked.
func (f Filter) Space(account, store, space string) bool {
	if f.Exclude.Match(account, store, space) {
		return false
	}
	return f.Include == nil || f.Include.Match(account, store, space)
}

// Store reports whether any space of the store may be checked, so a store
// that cannot contribute need not be opened or listed: false when an
// exclusion pattern covers the whole store ("*" space) or when no
// inclusion pattern can match it.
func (f Filter) Store(account, store string) bool {
	for _, p := range f.Exclude {
		if p.Space == "*" && segMatch(p.Account, account) && segMatch(p.Store, store) {
			return false
		}
	}
	if f.Include == nil {
		return true
	}
	for _, p := range f.Include {
		if segMatch(p.Account, account) && segMatch(p.Store, store) {
			return true
		}
	}
	return false
}
