package bit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/millfleet/mill/producers/bit"
)

func TestFilterFiles(t *testing.T) {
	inc, err := bit.LoadFilter("../../testdata/filters/include.txt")
	if err != nil {
		t.Fatal(err)
	}
	exc, err := bit.LoadFilter("../../testdata/filters/exclude.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(inc) != 3 || inc[2].Source != "../../testdata/filters/include.txt:7" || inc[0].String() != "/acme/*/photo*" {
		t.Fatalf("include patterns: %+v", inc)
	}
	f := bit.Filter{Include: inc, Exclude: exc}
	for _, tt := range []struct {
		account, store, space string
		want                  bool
	}{
		{"acme", "1", "photos", true},
		{"acme", "2", "photo", true},        // "photo*" matches "photo" itself
		{"acme", "1", "photos-tmp", false},  // excluded
		{"acme", "1", "archive", true},      // exact
		{"acme", "2", "archive", false},     // store 2 not included
		{"acme", "1", "archives", false},    // exact means exact
		{"globex", "1", "anything", true},   // /globex/*/*
		{"globex", "1", "x-scratch", false}, // /*/*/x-*
		{"globex", "3", "anything", false},  // whole store excluded
		{"initech", "1", "photos", false},   // not included
		{"acme", "1", "Photos", false},      // case-sensitive
	} {
		if got := f.Space(tt.account, tt.store, tt.space); got != tt.want {
			t.Errorf("Space(%s/%s/%s) = %v, want %v", tt.account, tt.store, tt.space, got, tt.want)
		}
	}
	for _, tt := range []struct {
		account, store string
		want           bool
	}{
		{"acme", "1", true}, {"globex", "2", true}, {"globex", "3", false}, {"initech", "1", false},
	} {
		if got := f.Store(tt.account, tt.store); got != tt.want {
			t.Errorf("Store(%s/%s) = %v, want %v", tt.account, tt.store, got, tt.want)
		}
	}
}

func TestFilterNoInclusionMeansEverything(t *testing.T) {
	exc, err := bit.ParseFilter("exc", strings.NewReader("/acme/1/secret\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := bit.Filter{Exclude: exc}
	if !f.Space("any", "1", "thing") || f.Space("acme", "1", "secret") || !f.Store("acme", "1") {
		t.Error("no inclusion file must include everything not excluded")
	}
	// An empty (but given) inclusion file includes nothing.
	inc, err := bit.ParseFilter("inc", strings.NewReader("# nothing\n\n"))
	if err != nil || inc != nil {
		t.Fatalf("empty file: %v %v", inc, err)
	}
	if (bit.Filter{Include: bit.Patterns{}}).Space("a", "b", "c") {
		t.Error("an empty non-nil inclusion list includes nothing")
	}
}

func TestFilterErrorsNameFileAndLine(t *testing.T) {
	_, err := bit.LoadFilter("../../testdata/filters/invalid.txt")
	if !errors.Is(err, bit.ErrFilter) {
		t.Fatalf("err = %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"invalid.txt:2: \"acme/1/space\": a pattern starts with '/'",
		"invalid.txt:3: \"/acme/1\": 2 segments",
		"invalid.txt:4: \"/acme//space\": empty store segment",
		"invalid.txt:5: \"/acme/1/sp*ce\": space segment \"sp*ce\": '*' is allowed only at the end",
		"invalid.txt:6: \"/acme/1/space/extra\": 4 segments",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, ":7:") {
		t.Errorf("valid line 7 reported:\n%s", msg)
	}
	if _, err := bit.LoadFilter("/nonexistent/filter"); !errors.Is(err, bit.ErrFilter) {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParseFilter(f *testing.F) {
	f.Add("/acme/*/photo*\n# c\n\n/a/b/c\n")
	f.Add("/a/b\n")
	f.Add("  /x*/y/z  \r\n")
	f.Add("/*/*/*")
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := bit.ParseFilter("fuzz", strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, bit.ErrFilter) {
				t.Fatalf("error does not wrap ErrFilter: %v", err)
			}
			return
		}
		for _, p := range ps {
			// A parsed pattern prints back to a line that parses to itself.
			again, err := bit.ParseFilter("again", strings.NewReader(p.String()))
			if err != nil || len(again) != 1 || again[0].Account != p.Account || again[0].Store != p.Store || again[0].Space != p.Space {
				t.Fatalf("%q → %q does not round-trip: %v %v", s, p.String(), again, err)
			}
			// A literal pattern matches its own names.
			if !strings.Contains(p.String(), "*") && !p.Match(p.Account, p.Store, p.Space) {
				t.Fatalf("%v does not match itself", p)
			}
		}
	})
}
