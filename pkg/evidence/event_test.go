package evidence

import (
	"bytes"
	"strings"
	"testing"
)

// TestCanonicalRoundTrip: every event type encodes to one line that
// parses back to the same event and the same bytes.
func TestCanonicalRoundTrip(t *testing.T) {
	for _, e := range sampleEvents() {
		b, err := e.Canonical()
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		if bytes.ContainsAny(b, "\n\r") {
			t.Fatalf("%s: canonical bytes span lines: %s", e.Type, b)
		}
		got, err := ParseCanonical(b)
		if err != nil {
			t.Fatalf("%s: %v", e.Type, err)
		}
		again, _ := got.Canonical()
		if !bytes.Equal(again, b) {
			t.Fatalf("%s: re-encoded\n%s\nwant\n%s", e.Type, again, b)
		}
	}
}

// TestCanonicalGolden pins the encoding: a change of it changes every
// leaf hash of every log, so it must be a new FormatVersion.
func TestCanonicalGolden(t *testing.T) {
	b, err := fixityEvent(7).Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"id":"` + EventID("bit", "run-1", "7") + `","type":"fixity check","time":"2026-07-01T12:00:00.007Z",` +
		`"object":{"account":"acme","store":"s3-east","space":"photos","contentId":"dir/item-7.tif"},` +
		`"fixity":{"algorithm":"md5","digest":"00000000000000000000000000000007","expected":"00000000000000000000000000000007","method":"read"},` +
		`"outcome":"success","agent":{"kind":"software","name":"workman","instance":"i-0abc","version":"v1.2.3"}}`
	if string(b) != want {
		t.Fatalf("canonical bytes\n%s\nwant\n%s", b, want)
	}
}

// TestParseCanonicalRejects: only the canonical encoding of a valid event
// parses.
func TestParseCanonicalRejects(t *testing.T) {
	b, _ := fixityEvent(1).Canonical()
	s := string(b)
	for name, in := range map[string]string{
		"space":          strings.Replace(s, `"v":1,`, `"v": 1,`, 1),
		"newline":        s + "\n",
		"unknown field":  strings.Replace(s, `{"v":1,`, `{"v":1,"x":2,`, 1),
		"field order":    strings.Replace(s, `"v":1,"id":"`+fixityEvent(1).ID+`",`, `"id":"`+fixityEvent(1).ID+`","v":1,`, 1),
		"escaped letter": strings.Replace(s, `"acme"`, `"\u0061cme"`, 1),
		"upper hex":      strings.Replace(s, `"digest":"00000000000000000000000000000001"`, `"digest":"0000000000000000000000000000000A"`, 1),
		"local time":     strings.Replace(s, `12:00:00.001Z`, `14:00:00.001+02:00`, 1),
		"version 2":      strings.Replace(s, `"v":1`, `"v":2`, 1),
		"two values":     s + s,
		"empty":          "",
	} {
		if _, err := ParseCanonical([]byte(in)); err == nil {
			t.Errorf("%s: parsed %s", name, in)
		}
	}
}

// TestValidate: each type's required fields, the vocabularies, and
// hostile strings.
func TestValidate(t *testing.T) {
	for name, mod := range map[string]func(e *Event){
		"no id":               func(e *Event) { e.ID = "" },
		"id with a slash":     func(e *Event) { e.ID = "a/b" },
		"unknown type":        func(e *Event) { e.Type = "migration" },
		"unknown outcome":     func(e *Event) { e.Outcome = "ok" },
		"no object store":     func(e *Event) { e.Object.Store = "" },
		"control character":   func(e *Event) { e.Object.ContentID = "a\nb" },
		"invalid utf-8":       func(e *Event) { e.Object.ContentID = "a\xffb" },
		"long field":          func(e *Event) { e.Detail = strings.Repeat("x", 2000) },
		"fixity without":      func(e *Event) { e.Fixity = nil },
		"unknown algorithm":   func(e *Event) { e.Fixity.Algorithm = "sha1" },
		"short digest":        func(e *Event) { e.Fixity.Digest = "abcd" },
		"unknown method":      func(e *Event) { e.Fixity.Method = "guess" },
		"no agent name":       func(e *Event) { e.Agent.Name = "" },
		"unknown agent kind":  func(e *Event) { e.Agent.Kind = "robot" },
		"time not utc":        func(e *Event) { e.Time = "2026-07-01T12:00:00+02:00" },
		"fixity with a rule":  func(e *Event) { e.Rule = "policy" },
		"replication without": func(e *Event) { e.Type = Replication; e.Fixity = nil },
		"deletion without":    func(e *Event) { e.Type = Deletion; e.Fixity = nil },
	} {
		e := fixityEvent(1)
		mod(e)
		if err := e.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
	}
	rep := sampleEvents()[1]
	rep.Source = &rep.Object
	if rep.Validate() == nil {
		t.Error("a replication from its own object is valid")
	}
}

// TestEventID: the same parts give the same ID, and parts do not run
// together.
func TestEventID(t *testing.T) {
	parts := []string{"a", "b"}
	if EventID(parts...) != EventID("a", "b") || EventID("ab", "c") == EventID("a", "bc") || EventID("a") == EventID("a", "") {
		t.Fatal("EventID is not a function of its parts")
	}
}

// sampleEvents is one event of each type (and an operator's).
func sampleEvents() []*Event {
	good := Copy{Account: "acme", Store: "s3-east", Space: "photos", ContentID: "a.tif"}
	bad := Copy{Account: "acme", Store: "gcs-west", Space: "photos", ContentID: "a.tif"}
	wm := Agent{Kind: Software, Name: "workman", Instance: "i-0abc", Version: "v1.2.3"}
	return []*Event{
		fixityEvent(1),
		{V: 1, ID: EventID("dup", "m-1"), Type: Replication, Time: FormatTime(t0), Object: bad, Source: &good, Outcome: Success, Agent: wm},
		{V: 1, ID: EventID("del", "m-2"), Type: Deletion, Time: FormatTime(t0), Object: bad, Outcome: Success, Rule: "policy acme: photos is not duplicated to gcs-west", Agent: wm},
		{V: 1, ID: EventID("repair", "m-3"), Type: Repair, Time: FormatTime(t0), Object: bad, Source: &good, Outcome: Success, Detail: "the copy's MD5 differed",
			Fixity: &Fixity{Algorithm: CRC64NVME, Digest: "0123456789abcdef", Expected: "0123456789abcdef", Method: MethodAtRest}, Agent: wm},
		{V: 1, ID: EventID("op", "rm-1"), Type: Deletion, Time: FormatTime(t0), Object: good, Outcome: Success, Rule: "operator request <ticket & 42>",
			Agent: Agent{Kind: Person, Name: "alice", Instance: "millctl", Version: "v1.2.3"}},
		{V: 1, ID: EventID("bit", "x"), Type: FixityCheck, Time: FormatTime(t0), Object: good, Outcome: Failure, Detail: "the copy could not be read: 404",
			Fixity: &Fixity{Algorithm: SHA256, Expected: strings.Repeat("ab", 32), Method: MethodRead}, Agent: wm},
	}
}
