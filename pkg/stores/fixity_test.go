package stores_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/stores"
)

const day = 24 * time.Hour

// fixityDoc is a registry of one active account whose stores are given.
func fixityDoc(stores string) string {
	return `{"accounts": [{"id": "a", "stores": [` + stores + `]}]}`
}

func TestFixityTargets(t *testing.T) {
	r, err := stores.Parse("r.json", []byte(fixityDoc(`
{"id": "1", "primary": true, "kind": "s3", "bucket": "b"},
{"id": "2", "kind": "s3", "bucket": "c", "fixity": {"interval": "30d", "archivedInterval": "36h", "archivedMethod": "restore", "sampleRate": 0.25}},
{"id": "3", "kind": "s3", "bucket": "d", "fixity": {"archivedMethod": "none"}},
{"id": "4", "kind": "fs", "root": "/r"},
{"id": "5", "kind": "fs", "root": "/s", "fixity": {"interval": "1h30m", "archivedMethod": "none", "sampleRate": 1}},
{"id": "6", "kind": "s3", "bucket": "e", "fixity": {}}`)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		store       string
		written     stores.Fixity
		target      stores.Fixity
		description string
	}{
		{"1", stores.Fixity{}, stores.Fixity{Interval: 90 * day, ArchivedInterval: 365 * day, ArchivedMethod: stores.ArchivedComputeChecksum, SampleRate: 1},
			"90d; archived 365d compute-checksum"},
		{"2", stores.Fixity{Interval: 30 * day, ArchivedInterval: 36 * time.Hour, ArchivedMethod: stores.ArchivedRestore, SampleRate: 0.25},
			stores.Fixity{Interval: 30 * day, ArchivedInterval: 36 * time.Hour, ArchivedMethod: stores.ArchivedRestore, SampleRate: 0.25},
			"30d; archived 36h0m0s restore; sample 0.25"},
		{"3", stores.Fixity{ArchivedMethod: stores.ArchivedNone}, stores.Fixity{Interval: 90 * day, ArchivedInterval: 365 * day, ArchivedMethod: stores.ArchivedNone, SampleRate: 1},
			"90d; archived 365d none"},
		{"4", stores.Fixity{}, stores.Fixity{Interval: 90 * day, ArchivedInterval: 365 * day, SampleRate: 1}, "90d"},
		{"5", stores.Fixity{Interval: 90 * time.Minute, ArchivedMethod: stores.ArchivedNone, SampleRate: 1},
			stores.Fixity{Interval: 90 * time.Minute, ArchivedInterval: 365 * day, ArchivedMethod: stores.ArchivedNone, SampleRate: 1}, "1h30m0s; archived 365d none"},
		{"6", stores.Fixity{}, stores.Fixity{Interval: 90 * day, ArchivedInterval: 365 * day, ArchivedMethod: stores.ArchivedComputeChecksum, SampleRate: 1},
			"90d; archived 365d compute-checksum"},
	} {
		s, err := r.Store("a", tc.store)
		if err != nil {
			t.Fatal(err)
		}
		if s.Fixity != tc.written {
			t.Errorf("store %s: fixity as written %+v, want %+v", tc.store, s.Fixity, tc.written)
		}
		got := s.FixityTarget()
		if got != tc.target {
			t.Errorf("store %s: target %+v, want %+v", tc.store, got, tc.target)
		}
		if got.String() != tc.description {
			t.Errorf("store %s: %q, want %q", tc.store, got.String(), tc.description)
		}
	}
	if got := (stores.Fixity{ArchivedInterval: 365 * day}).IntervalFor(true); got != 365*day {
		t.Errorf("IntervalFor(archived) = %v", got)
	}

	// Written back as it was read: whole days as days, the rest as Go
	// durations, unset fields left out.
	b, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"fixity": {
            "interval": "30d",
            "archivedInterval": "36h0m0s",
            "archivedMethod": "restore",
            "sampleRate": 0.25
          }`,
		`"fixity": {
            "archivedMethod": "none"
          }`,
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("marshalled registry lacks %s:\n%s", want, b)
		}
	}
	if n := strings.Count(string(b), `"fixity"`); n != 3 {
		t.Errorf("%d fixity objects written, want 3 (stores 2, 3, 5):\n%s", n, b)
	}
	r2, err := stores.Parse("x", b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	for i, s := range r2.Accounts[0].Stores {
		if s != r.Accounts[0].Stores[i] {
			t.Errorf("store %s after a round trip: %+v, want %+v", s.ID, s, r.Accounts[0].Stores[i])
		}
	}
	// A registry built in code is checked as a file is.
	bad := &stores.Registry{Accounts: []stores.Account{{ID: "a", Status: stores.StatusActive, Stores: []stores.Store{
		{ID: "1", Primary: true, Kind: "fs", Root: "/r", Fixity: stores.Fixity{Interval: -time.Hour, ArchivedMethod: stores.ArchivedComputeChecksum}}}}}}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `fixity: interval "-1h0m0s" must be positive`) ||
		!strings.Contains(err.Error(), `fixity: archivedMethod "compute-checksum" is for s3 stores`) {
		t.Errorf("Validate = %v", err)
	}
}

// TestFixityErrors: each bad value of a store's "fixity" object is
// reported at its own line and column (the first byte of what is wrong),
// naming the account and store.
func TestFixityErrors(t *testing.T) {
	const s3 = `{"id": "1", "primary": true, "kind": "s3", "bucket": "b", "fixity": `
	const fs = `{"id": "1", "primary": true, "kind": "fs", "root": "/r", "fixity": `
	type at struct{ where, msg string } // where: the text the error points at (its first occurrence after "fixity")
	for _, tc := range []struct {
		name, store string
		want        []at
	}{
		{"negative days", s3 + `{"interval": "-5d"}}`, []at{{`"-5d"`, `interval "-5d" must be positive`}}},
		{"negative duration", s3 + `{"archivedInterval": "-1h"}}`, []at{{`"-1h"`, `archivedInterval "-1h" must be positive`}}},
		{"zero days", s3 + `{"interval": "0d"}}`, []at{{`"0d"`, `interval "0d" must be positive`}}},
		{"zero duration", s3 + `{"archivedInterval": "0s"}}`, []at{{`"0s"`, `archivedInterval "0s" must be positive`}}},
		{"unparseable", s3 + `{"interval": "ninety days"}}`,
			[]at{{`"ninety`, `interval "ninety days" is not a duration (want a Go duration such as "720h" or whole days such as "90d")`}}},
		{"fractional days", s3 + `{"interval": "1.5d"}}`,
			[]at{{`"1.5d"`, `interval "1.5d" is not a duration (want a Go duration such as "720h" or whole days such as "90d")`}}},
		{"too many days", s3 + `{"interval": "300000d"}}`, []at{{`"300000d"`, `interval "300000d" is too long`}}},
		{"too long a duration", s3 + `{"interval": "9999999999h"}}`,
			[]at{{`"9999999999h"`, `interval "9999999999h" is not a duration (want a Go duration such as "720h" or whole days such as "90d")`}}},
		{"a number of days", s3 + `{"interval": 90}}`, []at{{`90`, `interval must be a string such as "90d" or "720h", not the number 90`}}},
		{"unknown method", s3 + `{"archivedMethod": "glacier"}}`,
			[]at{{`"glacier"`, `unknown archivedMethod "glacier" (want compute-checksum, restore or none)`}}},
		{"method in capitals", s3 + `{"archivedMethod": "NONE"}}`,
			[]at{{`"NONE"`, `unknown archivedMethod "NONE" (want compute-checksum, restore or none)`}}},
		{"method not a string", s3 + `{"archivedMethod": ["none"]}}`,
			[]at{{`[`, `archivedMethod must be one of the strings compute-checksum, restore or none, not an array`}}},
		{"rate zero", s3 + `{"sampleRate": 0}}`, []at{{`0}`, `sampleRate 0 must be more than 0 and at most 1`}}},
		{"rate negative", s3 + `{"sampleRate": -0.5}}`, []at{{`-0.5`, `sampleRate -0.5 must be more than 0 and at most 1`}}},
		{"rate above one", s3 + `{"sampleRate": 1.0001}}`, []at{{`1.0001`, `sampleRate 1.0001 must be more than 0 and at most 1`}}},
		{"rate underflows to zero", s3 + `{"sampleRate": 1e-400}}`, []at{{`1e-400`, `sampleRate 1e-400 must be more than 0 and at most 1`}}},
		{"rate a string", s3 + `{"sampleRate": "0.5"}}`,
			[]at{{`"0.5"`, `sampleRate must be a number more than 0 and at most 1, not the string "0.5"`}}},
		{"unknown key", s3 + `{"intervall": "90d"}}`,
			[]at{{`"intervall"`, `unknown key "intervall" (want interval, archivedInterval, archivedMethod, sampleRate)`}}},
		{"credential-like key", s3 + `{"secretKey": "x"}}`,
			[]at{{`"secretKey"`, `unknown key "secretKey" (want interval, archivedInterval, archivedMethod, sampleRate)`}}},
		{"repeated key", s3 + `{"interval": "9d", "interval": "8d"}}`, []at{{`"interval": "8d"`, `key "interval" appears twice`}}},
		{"not an object", s3 + `"90d"}`, []at{{`"90d"`, `must be an object such as {"interval": "90d"}, not the string "90d"`}}},
		{"null", s3 + `null}`, []at{{`null`, `must be an object such as {"interval": "90d"}, not null`}}},
		{"compute-checksum on fs", fs + `{"archivedMethod": "compute-checksum"}}`,
			[]at{{`"compute-checksum"`, `archivedMethod "compute-checksum" is for s3 stores: an fs store has no archival storage class (leave it out, or none)`}}},
		{"restore on fs", fs + `{"archivedMethod": "restore"}}`,
			[]at{{`"restore"`, `archivedMethod "restore" is for s3 stores: an fs store has no archival storage class (leave it out, or none)`}}},
		{"archived interval on fs", fs + `{"archivedInterval": "30d"}}`,
			[]at{{`"30d"`, `archivedInterval is for s3 stores: an fs store has no archival storage class`}}},
		{"none on fs is fine", fs + `{"archivedMethod": "none", "interval": "30d"}}`, nil},
		{"every problem at once", s3 + `{"interval": "0d", "sampleRate": 2, "x": 1}}`, []at{
			{`"0d"`, `interval "0d" must be positive`},
			{`2,`, `sampleRate 2 must be more than 0 and at most 1`},
			{`"x"`, `unknown key "x" (want interval, archivedInterval, archivedMethod, sampleRate)`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := fixityDoc(tc.store)
			from := strings.Index(doc, `"fixity"`)
			var want []string
			for _, w := range tc.want {
				i := strings.Index(doc[from:], w.where)
				if i < 0 {
					t.Fatalf("test: %q not in %s", w.where, doc)
				}
				want = append(want, fmt.Sprintf(`r.json:1:%d: account "a" store "1": fixity: %s`, from+i+1, w.msg))
			}
			_, err := stores.Parse("r.json", []byte(doc))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != strings.Join(want, "\n") {
				t.Fatalf("error:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}

func TestFixityDurations(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{{"90d", 90 * day}, {"1d", day}, {"007d", 7 * day}, {"720h", 30 * day}, {"1h30m", 90 * time.Minute}, {"1ms", time.Millisecond}} {
		got, err := stores.ParseFixityDuration(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseFixityDuration(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		back, err := stores.ParseFixityDuration(stores.FormatFixityDuration(got))
		if err != nil || back != got {
			t.Errorf("%q: %q reads back as %v, %v", tc.in, stores.FormatFixityDuration(got), back, err)
		}
	}
	for _, in := range []string{"", "d", "90", "-1d", "0", "1y", " 90d", "90D", "0x10d", "+5d"} {
		if d, err := stores.ParseFixityDuration(in); err == nil {
			t.Errorf("ParseFixityDuration(%q) = %v, want an error", in, d)
		}
	}
}
