package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

func readTestdata(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "policies", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// DuraCloud's published sample policy has a trailing comma after the last
// store policy of spaceA; the error must name the file and the exact position
// of the comma (not the ']' on the next line).
func TestParseDuraCloudSampleTrailingComma(t *testing.T) {
	data := readTestdata(t, "invalid/account1-duplication-policy.json")
	_, err := policy.Parse("account1-duplication-policy.json", data)
	if err == nil {
		t.Fatal("Parse accepted the trailing comma")
	}
	want := "account1-duplication-policy.json:5:45: trailing comma before ']'"
	if err.Error() != want {
		t.Fatalf("error = %q\nwant    %q", err, want)
	}
	var pe *jsonpos.Error
	if !errors.As(err, &pe) || pe.Line != 5 || pe.Col != 45 {
		t.Fatalf("not a positioned error at 5:45: %#v", err)
	}
	// The position really is the comma.
	lines := strings.Split(string(data), "\n")
	if got := lines[pe.Line-1][pe.Col-1]; got != ',' {
		t.Fatalf("5:45 is %q, not ','", got)
	}
}

func TestParseSeedSampleFixed(t *testing.T) {
	p, err := policy.Parse("account1-duplication-policy.json", readTestdata(t, "account1-duplication-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.StorePolicies("spaceA"), []policy.StorePolicy{{"1", "2"}}; !slices.Equal(got, want) {
		t.Errorf("spaceA = %v, want %v", got, want)
	}
	if got, want := p.StorePolicies("spaceB"), []policy.StorePolicy{{"1", "2"}, {"1", "3"}}; !slices.Equal(got, want) {
		t.Errorf("spaceB = %v, want %v", got, want)
	}
	if got := p.StorePolicies("spaceC"); got != nil {
		t.Errorf("spaceC (no default) = %v, want none", got)
	}
	if got, want := p.Spaces(), []string{"spaceA", "spaceB"}; !slices.Equal(got, want) {
		t.Errorf("Spaces = %v, want %v", got, want)
	}
	if got, want := p.StoreIDs(), []string{"1", "2", "3"}; !slices.Equal(got, want) {
		t.Errorf("StoreIDs = %v", got)
	}
	if got := p.ForSource("spaceB", "1"); len(got) != 2 {
		t.Errorf("ForSource(spaceB, 1) = %v", got)
	}
	if got := p.ForSource("spaceB", "2"); len(got) != 0 {
		t.Errorf("ForSource(spaceB, 2) = %v", got)
	}
}

func TestDefaultsIgnoreAndSystemSpaces(t *testing.T) {
	p, err := policy.Parse("account2-duplication-policy.json", readTestdata(t, "account2-duplication-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	def := []policy.StorePolicy{{"1", "2"}}
	for _, tc := range []struct {
		space string
		want  []policy.StorePolicy
	}{
		{"photos", []policy.StorePolicy{{"1", "2"}}},
		{"anything-else", def},
		{"scratch-archive", def}, // an empty list falls back to the default, as in Java
		{"tmp", nil},             // ignored
		{"x-service-out", nil},   // system space
		{"x-", nil},
	} {
		got := p.StorePolicies(tc.space)
		if !slices.Equal(got, tc.want) {
			t.Errorf("StorePolicies(%q) = %v, want %v", tc.space, got, tc.want)
		}
	}
	if p.Duplicated("tmp") || p.Duplicated("x-foo") || !p.Duplicated("other") {
		t.Error("Duplicated wrong")
	}
}

func TestParseErrorsArePositioned(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string // each a line of the error
	}{
		{"empty", ``, []string{"f.json:1:1: unexpected end of JSON input"}},
		{"truncated", "{\n  \"spaceDuplicationStorePolicies\": {", []string{"f.json:2:37: unexpected end of JSON input"}},
		{"not an object", `[1]`, []string{"f.json:1:1: a duplication policy must be an object, not an array"}},
		{"trailing data", `{} {}`, []string{"f.json:1:4: invalid character '{' after top-level value"}},
		{"src equals dest", "{\"spaceDuplicationStorePolicies\": {\n  \"a\": [{\"srcStoreId\": \"1\", \"destStoreId\": \"1\"}]}}",
			[]string{`f.json:2:9: store policy duplicates store "1" onto itself`}},
		{"empty id", "{\"defaultPolicies\": [\n {\"srcStoreId\": \"\", \"destStoreId\": \"2\"}]}",
			[]string{`f.json:2:2: store policy needs a non-empty srcStoreId and destStoreId`}},
		{"number id", `{"defaultPolicies": [{"srcStoreId": 1, "destStoreId": "2"}]}`,
			[]string{`f.json:1:37: srcStoreId must be a string, not the number 1`, `f.json:1:22: store policy needs a non-empty srcStoreId and destStoreId`}},
		{"unknown key", "{\n\"spaceDuplicationStorePolicy\": {}}",
			[]string{`f.json:2:1: unknown key "spaceDuplicationStorePolicy" (want spaceDuplicationStorePolicies, defaultPolicies or spacesToIgnore)`}},
		{"system space", `{"spaceDuplicationStorePolicies": {"x-work": [{"srcStoreId": "1", "destStoreId": "2"}]}}`,
			[]string{`f.json:1:36: space "x-work": spaces starting with "x-" are never duplicated`}},
		{"listed and ignored", `{"spaceDuplicationStorePolicies": {"a": []}, "spacesToIgnore": ["a"]}`,
			[]string{`f.json:1:65: space "a" is both listed in spaceDuplicationStorePolicies and ignored`}},
		{"duplicate store policy", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"destStoreId": "2", "srcStoreId": "1"}]}`,
			[]string{`f.json:1:63: store policy 1→2 appears twice`}},
		{"duplicate space", `{"spaceDuplicationStorePolicies": {"a": [], "a": []}}`,
			[]string{`f.json:1:45: space "a" appears twice`}},
		{"trailing comma", "{\"defaultPolicies\": [\n  {\"srcStoreId\": \"1\", \"destStoreId\": \"2\"},\n]}",
			[]string{`f.json:2:42: trailing comma before ']'`}},
		{"latin-1 space id", "{\"spacesToIgnore\": [\"caf\xe9\"]}",
			[]string{`f.json:1:25: invalid UTF-8 (byte 0xe9); the file must be UTF-8`}},
		{"cycle of two", "{\"spaceDuplicationStorePolicies\": {\"a\": [\n  {\"srcStoreId\": \"1\", \"destStoreId\": \"2\"},\n  {\"srcStoreId\": \"2\", \"destStoreId\": \"1\"}]}}",
			[]string{`f.json:3:3: space "a": the store policies form a cycle 1→2→1; Mill refuses cycles between stores (each would overwrite and delete what the other holds)`}},
		{"longer cycle in the defaults", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "3", "destStoreId": "1"}, {"srcStoreId": "2", "destStoreId": "3"}]}`,
			[]string{`f.json:1:104: defaultPolicies: the store policies form a cycle 3→1→2→3; Mill refuses cycles between stores (each would overwrite and delete what the other holds)`}},
		{"two sources into one destination", "{\"spaceDuplicationStorePolicies\": {\"a\": [\n  {\"srcStoreId\": \"1\", \"destStoreId\": \"3\"},\n  {\"srcStoreId\": \"2\", \"destStoreId\": \"3\"}]}}",
			[]string{`f.json:3:3: space "a": store "3" is the destination of two store policies, 1→3 and 2→3; Mill refuses them (each would overwrite and delete what the other copied)`}},
		{"chain with a shortcut in the defaults", `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}, {"srcStoreId": "1", "destStoreId": "3"}]}`,
			[]string{`f.json:1:104: defaultPolicies: store "3" is the destination of two store policies, 2→3 and 1→3; Mill refuses them (each would overwrite and delete what the other copied)`}},
		{"byte order mark", "\xef\xbb\xbf{\"spacesToIgnore\": []}",
			[]string{`f.json:1:1: the file starts with a UTF-8 byte order mark (BOM); save it as UTF-8 without one`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse("f.json", []byte(tc.doc))
			if err == nil {
				t.Fatal("Parse accepted it")
			}
			got := strings.Split(err.Error(), "\n")
			slices.Sort(got)
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// Chains and fan-outs are not cycles; neither are opposite directions in
// different spaces (each space's content flows one way), nor one store
// receiving from different sources in different spaces.
func TestParseAcceptsAcyclicGraphs(t *testing.T) {
	for _, doc := range []string{
		`{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}, {"srcStoreId": "1", "destStoreId": "4"}]}`,
		`{"spaceDuplicationStorePolicies": {"a": [{"srcStoreId": "1", "destStoreId": "3"}], "b": [{"srcStoreId": "2", "destStoreId": "3"}]}}`,
		`{"spaceDuplicationStorePolicies": {"a": [{"srcStoreId": "1", "destStoreId": "2"}], "b": [{"srcStoreId": "2", "destStoreId": "1"}]}}`,
		`{"spaceDuplicationStorePolicies": {"a": [{"srcStoreId": "2", "destStoreId": "1"}]}, "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	} {
		if _, err := policy.Parse("f.json", []byte(doc)); err != nil {
			t.Errorf("Parse(%s): %v", doc, err)
		}
	}
	// A policy built in code is checked the same way before it is stored.
	p := &policy.Policy{Default: []policy.StorePolicy{{"1", "2"}, {"2", "1"}}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "cycle 1→2→1") {
		t.Fatalf("Validate = %v", err)
	}
	p = &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{"s": {{"1", "3"}, {"2", "3"}}}}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "two store policies, 1→3 and 2→3") {
		t.Fatalf("Validate = %v", err)
	}
}

func TestCheckKnownStores(t *testing.T) {
	data := []byte("{\n  \"spaceDuplicationStorePolicies\": {\n    \"a\": [{\"srcStoreId\": \"1\", \"destStoreId\": \"9\"}]\n  },\n  \"defaultPolicies\": [{\"srcStoreId\": \"1\", \"destStoreId\": \"2\"}]\n}\n")
	p, err := policy.Parse("acct-duplication-policy.json", data)
	if err != nil {
		t.Fatal(err)
	}
	known := func(id string) bool { return id == "1" || id == "2" }
	err = p.Check(known)
	want := `acct-duplication-policy.json:3:11: store "9" is not a registered store of the account`
	if err == nil || err.Error() != want {
		t.Fatalf("Check = %v, want %s", err, want)
	}
	if err := p.Check(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	// A policy built in code names the space and index.
	q := &policy.Policy{SpacePolicies: map[string][]policy.StorePolicy{"s": {{"1", "7"}}}}
	if err := q.Check(known); err == nil || !strings.Contains(err.Error(), `space "s"[0]: store "7"`) {
		t.Fatalf("Check = %v", err)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	p, err := policy.Parse("x", readTestdata(t, "account2-duplication-policy.json"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	q, err := policy.Parse("x", b)
	if err != nil {
		t.Fatalf("reparse: %v\n%s", err, b)
	}
	if !p.Equal(q) {
		t.Fatalf("round trip changed the policy:\n%s", b)
	}
	if !strings.Contains(string(b), `"scratch-archive": []`) {
		t.Fatalf("explicit empty list lost:\n%s", b)
	}
}

func TestParseAccounts(t *testing.T) {
	got, err := policy.ParseAccounts("duplication-accounts.json", readTestdata(t, "duplication-accounts.json"))
	if err != nil || !slices.Equal(got, []string{"account1", "account2"}) {
		t.Fatalf("ParseAccounts = %v, %v", got, err)
	}
	_, err = policy.ParseAccounts("d.json", []byte(`["a", "a", ""]`))
	if err == nil || err.Error() != "d.json:1:7: account \"a\" is listed twice\nd.json:1:12: empty account id" {
		t.Fatalf("err = %v", err)
	}
	_, err = policy.ParseAccounts("d.json", []byte(`{"a": 1}`))
	if err == nil || !strings.HasPrefix(err.Error(), "d.json:1:1: the account list must be an array") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, rel := range []string{"account1-duplication-policy.json", "account2-duplication-policy.json", "invalid/account1-duplication-policy.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "policies", rel))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"spacesToIgnore": ["a"], "defaultPolicies": []}`))
	f.Add([]byte(`{"spaceDuplicationStorePolicies": {"a": [{"srcStoreId": "\u00e9", "destStoreId": "2"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse("f.json", data)
		if err != nil {
			var pe *jsonpos.Error
			if !errors.As(err, &pe) {
				t.Fatalf("error without position: %v", err)
			}
			return
		}
		for s := range p.SpacePolicies {
			_ = p.StorePolicies(s)
		}
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := policy.Parse("f.json", b)
		if err != nil {
			t.Fatalf("written policy does not parse: %v\n%s", err, b)
		}
		if !p.Equal(q) {
			t.Fatalf("round trip changed the policy\n%q\n%s", data, b)
		}
	})
}
