package stores_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/stores"
)

func TestPlacesParseAndRoundTrip(t *testing.T) {
	r, err := stores.Parse("r.json", []byte(fixityDoc(`
{"id": "1", "primary": true, "kind": "s3", "bucket": "b", "region": "us-east-1", "provider": "aws", "threatZone": "us-east-coast"},
{"id": "2", "kind": "fs", "root": "/srv/r", "region": "eu-central", "provider": "on-premises", "threatZone": "rhine_valley.2"},
{"id": "3", "kind": "s3", "bucket": "c", "region": ""}`)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]string{"1": {"us-east-1", "aws", "us-east-coast"}, "2": {"eu-central", "on-premises", "rhine_valley.2"}, "3": {}}
	for id, w := range want {
		s, err := r.Store("a", id)
		if err != nil {
			t.Fatal(err)
		}
		if got := [3]string{s.Region, s.Provider, s.ThreatZone}; got != w {
			t.Errorf("store %s: region, provider, threatZone = %q, want %q", id, got, w)
		}
	}
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := stores.Parse("back.json", b)
	if err != nil {
		t.Fatalf("the marshalled registry does not parse: %v\n%s", err, b)
	}
	if s, _ := back.Store("a", "2"); s.Provider != "on-premises" || s.ThreatZone != "rhine_valley.2" || s.Region != "eu-central" {
		t.Fatalf("round trip lost the places: %+v", s)
	}
}

// Each wrong value is refused at its own line and column, naming the
// account and store.
func TestPlacesRefuseHostileValues(t *testing.T) {
	long := strings.Repeat("a", stores.MaxPlaceLen+1)
	for _, tc := range []struct{ name, field, want string }{
		{"number", `"region": 5`, `r.json:2:85: account "a" store "1": region must be a string, not the number 5`},
		{"object", `"provider": {"name": "aws"}`, `r.json:2:87: account "a" store "1": provider must be a string, not an object`},
		{"array", `"threatZone": ["x"]`, `r.json:2:89: account "a" store "1": threatZone must be a string, not an array`},
		{"null", `"provider": null`, `r.json:2:87: account "a" store "1": provider must be a string, not null`},
		{"empty provider", `"provider": ""`, `r.json:2:87: account "a" store "1": provider must not be empty (leave the key out when unknown)`},
		{"empty threat zone", `"threatZone": ""`, `threatZone must not be empty`},
		{"too long", `"threatZone": "` + long + `"`, `r.json:2:89: account "a" store "1": threatZone is 65 bytes long, more than 64`},
		{"newline", `"provider": "aws\nevil"`, `provider "aws\nevil": character '\n' at byte 3 is not allowed`},
		{"terminal escape", `"region": "us\u001b[31m"`, `character '\x1b' at byte 2`},
		{"path", `"provider": "../../etc"`, `character '.' at byte 0`},
		{"html", `"threatZone": "<script>"`, `character '<' at byte 0`},
		{"space", `"region": "us east"`, `character ' ' at byte 2`},
		{"unicode", `"provider": "ａws"`, `character 'ａ' at byte 0`},
		{"twice", `"provider": "aws", "provider": "gcp"`, `store: key "provider" appears twice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "{\"accounts\": [{\"id\": \"a\", \"stores\": [\n" +
				`{"id": "1", "primary": true, "kind": "s3", "bucket": "b", "prefix": "p/", ` + tc.field + "}]}]}"
			_, err := stores.Parse("r.json", []byte(doc))
			if err == nil {
				t.Fatalf("accepted %s", tc.field)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant it to contain %q", err, tc.want)
			}
		})
	}
}
