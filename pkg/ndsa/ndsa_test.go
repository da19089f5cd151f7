package ndsa

import (
	"strings"
	"testing"
)

func cell(t *testing.T, cells []Cell, a Area, level int) Cell {
	t.Helper()
	for _, c := range cells {
		if c.Area == a && c.Level == level {
			return c
		}
	}
	t.Fatalf("no cell %s %d", a, level)
	return Cell{}
}

func requirement(t *testing.T, c Cell, prefix string) Requirement {
	t.Helper()
	for _, r := range c.Requirements {
		if strings.HasPrefix(r.Text, prefix) {
			return r
		}
	}
	t.Fatalf("cell %s %d has no requirement %q", c.Area, c.Level, prefix)
	return Requirement{}
}

func aws(store, region, zone string, items int64) Copy {
	return Copy{Store: store, Provider: "aws", Region: region, ThreatZone: zone, Media: "s3:STANDARD", Items: items}
}

func TestStorageCells(t *testing.T) {
	for _, tc := range []struct {
		name   string
		copies []Copy
		level  int
		req    string
		want   Verdict
		why    string
	}{
		{"one copy", []Copy{aws("a/1", "us-east-1", "east", 5)}, 1, "Two complete", NotMet, "1 complete copies in 1 stores"},
		{"two copies", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-east-1", "east", 5)}, 1, "Two complete", Met, "every space (1)"},
		{"second copy incomplete", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-west-2", "west", 4)}, 1, "Two complete", NotMet, "1 complete copies"},
		{"two copies in one region", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-east-1", "east", 5), aws("a/3", "us-east-1", "east", 5)}, 2, "Three complete", NotMet, "in 1 regions"},
		{"three copies two regions", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-east-1", "east", 5), aws("a/3", "eu-west-1", "eu", 5)}, 2, "Three complete", Met, ""},
		{"two copies two regions", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "eu-west-1", "eu", 5)}, 2, "Three complete", NotMet, "2 complete copies in 2 stores"},
		{"regions unknown", []Copy{aws("a/1", "", "", 5), aws("a/2", "", "", 5), aws("a/3", "", "", 5)}, 2, "Three complete", NotMet, "3 with none set"},
		{"one threat zone", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-east-2", "east", 5)}, 3, "At least one copy in a location", NotMet, "1 threat zones"},
		{"two threat zones", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-west-2", "west", 5)}, 3, "At least one copy in a location", Met, ""},
		{"one media", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-west-2", "west", 5)}, 3, "At least one copy on a different", NotMet, "1 media types"},
		{"two media", []Copy{aws("a/1", "us-east-1", "east", 5), {Store: "a/2", Provider: "own", Region: "x", ThreatZone: "y", Media: "fs", Items: 5}}, 3, "At least one copy on a different", Met, ""},
		{"three zones, three providers", []Copy{aws("a/1", "us-east-1", "east", 5),
			{Store: "a/2", Provider: "wasabi", Region: "eu-central-1", ThreatZone: "rhine", Media: "s3:STANDARD", Items: 5},
			{Store: "a/3", Provider: "own", Region: "ca", ThreatZone: "pacific", Media: "fs", Items: 5}}, 4, "At least three copies", Met, ""},
		{"three copies, two zones", []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-east-2", "east", 5), aws("a/3", "us-west-2", "west", 5)}, 4, "At least three copies", NotMet, "2 threat zones"},
		{"one provider, two media", []Copy{aws("a/1", "us-east-1", "east", 5), {Store: "a/2", Provider: "aws", Media: "s3:GLACIER", Items: 5}}, 4, "Maximise", Partial, "1 providers"},
		{"providers unset", []Copy{{Store: "a/1", Media: "s3", Items: 5}, {Store: "a/2", Media: "s3", Items: 5}}, 1, "Document all storage", Partial, "2 copies on stores without a provider"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cells := Judge(Facts{Spaces: []Space{{Account: "a", Space: "s", Copies: tc.copies}}})
			r := requirement(t, cell(t, cells, Storage, tc.level), tc.req)
			if r.Verdict != tc.want || !strings.Contains(r.Why, tc.why) {
				t.Fatalf("%s: %s (%s), want %s containing %q", r.Text, r.Verdict, r.Why, tc.want, tc.why)
			}
			if len(r.Sources) != 1 || r.Sources[0] != SourceCopies {
				t.Fatalf("sources %v, want copies", r.Sources)
			}
		})
	}
}

// Over several spaces a requirement is partial when some spaces meet it,
// and the reason names those that do not.
func TestStorageAcrossSpaces(t *testing.T) {
	good := Space{Account: "a", Space: "good", Copies: []Copy{aws("a/1", "us-east-1", "east", 5), aws("a/2", "us-west-2", "west", 5)}}
	bad := Space{Account: "a", Space: "bad", Copies: []Copy{aws("a/1", "us-east-1", "east", 5)}}
	r := requirement(t, cell(t, Judge(Facts{Spaces: []Space{good, bad}}), Storage, 1), "Two complete")
	if r.Verdict != Partial || !strings.Contains(r.Why, "1 of 2 spaces") || !strings.Contains(r.Why, "a/bad (") || strings.Contains(r.Why, "a/good") {
		t.Fatalf("%s: %s", r.Verdict, r.Why)
	}
	r = requirement(t, cell(t, Judge(Facts{}), Storage, 1), "Two complete")
	if r.Verdict != NotMet || !strings.Contains(r.Why, "no space") {
		t.Fatalf("no spaces: %s: %s", r.Verdict, r.Why)
	}
}

func TestIntegrityControlMetadataCells(t *testing.T) {
	healthy := Facts{ActiveAccounts: 2, PolicyAccounts: 2, PolicyChanges: 3, Copies: 10, Within: 10,
		Events: 30, FixityChecks: 20, FixityFailed: 1, Replications: 8, Repairs: 1, RepairsVerified: 1,
		CorruptCopies: 1, Checkpoint: true, LogVerified: true}
	for _, tc := range []struct {
		name  string
		edit  func(*Facts)
		area  Area
		level int
		req   string
		want  Verdict
		why   string
	}{
		{"all verified", nil, Integrity, 1, "Verify integrity information provided", Met, "10 of 10"},
		{"never verified", func(f *Facts) { f.NeverVerified = 4 }, Integrity, 1, "Verify integrity information provided", Partial, "6 of 10"},
		{"no copy", func(f *Facts) { f.Copies, f.Within = 0, 0 }, Integrity, 1, "Verify integrity information provided", NotMet, "0 of 0"},
		{"replications", nil, Integrity, 2, "Verify integrity information when moving", Met, "8 replications"},
		{"no replication", func(f *Facts) { f.Replications = 0 }, Integrity, 2, "Verify integrity information when moving", NotEvidenced, "no replication"},
		{"log verified", nil, Integrity, 2, "Back up integrity", Met, "signed evidence log"},
		{"log tampered", func(f *Facts) { f.LogVerified, f.LogProblems = false, 2 }, Integrity, 2, "Back up integrity", Partial, "named 2 problems"},
		{"no log", func(f *Facts) { f.LogVerified, f.Checkpoint = false, false }, Integrity, 2, "Back up integrity", NotMet, "no signed checkpoint"},
		{"within target", nil, Integrity, 3, "Verify integrity information at fixed", Met, "10 of 10"},
		{"overdue", func(f *Facts) { f.Within = 7 }, Integrity, 3, "Verify integrity information at fixed", Partial, "7 of 10"},
		{"none within", func(f *Facts) { f.Within = 0 }, Integrity, 3, "Verify integrity information at fixed", NotMet, "0 of 10"},
		{"repaired", nil, Integrity, 4, "Replace or repair", Met, "1 of 1 copies"},
		{"unrepaired", func(f *Facts) { f.CorruptCopies, f.Unrepaired = 2, 1 }, Integrity, 4, "Replace or repair", Partial, "1 of 2 copies"},
		{"nothing corrupt", func(f *Facts) { f.CorruptCopies = 0 }, Integrity, 4, "Replace or repair", NotEvidenced, "nothing to repair"},
		{"repair unverified", func(f *Facts) { f.RepairsVerified = 0 }, Integrity, 4, "Verify integrity in response", NotMet, "0 of 1 repairs"},
		{"policies", nil, Control, 1, "Determine", Met, "2 of 2 active accounts"},
		{"an account without policy", func(f *Facts) { f.PolicyAccounts = 1 }, Control, 1, "Determine", Partial, "1 of 2"},
		{"applied", nil, Control, 2, "Document the authorised", Partial, "3 recorded changes"},
		{"agents logged", nil, Control, 3, "Keep logs", Met, "30 events"},
		{"no events", func(f *Facts) { f.Events = 0 }, Control, 3, "Keep logs", NotMet, "no event"},
		{"inventory", nil, Metadata, 1, "Inventory", Met, "10 copies"},
		{"actions recorded", nil, Metadata, 4, "Record preservation", Met, "30 timed events"},
		{"actions in a bad log", func(f *Facts) { f.LogVerified, f.LogProblems = false, 1 }, Metadata, 4, "Record preservation", Partial, "named 1 problems"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := healthy
			if tc.edit != nil {
				tc.edit(&f)
			}
			r := requirement(t, cell(t, Judge(f), tc.area, tc.level), tc.req)
			if r.Verdict != tc.want || !strings.Contains(r.Why, tc.why) {
				t.Fatalf("%s: %s (%s), want %s containing %q", r.Text, r.Verdict, r.Why, tc.want, tc.why)
			}
		})
	}
}

func TestCellVerdictsCombineTheEvidencedRequirements(t *testing.T) {
	for _, tc := range []struct {
		vs   []Verdict
		want Verdict
	}{
		{[]Verdict{Met, Met, NotEvidenced}, Met},
		{[]Verdict{NotMet, NotEvidenced}, NotMet},
		{[]Verdict{Met, NotMet}, Partial},
		{[]Verdict{Partial}, Partial},
		{[]Verdict{NotEvidenced}, NotEvidenced},
		{nil, NotEvidenced},
	} {
		var rs []Requirement
		for _, v := range tc.vs {
			rs = append(rs, Requirement{Verdict: v})
		}
		if got := combine(rs); got != tc.want {
			t.Errorf("combine(%v) = %s, want %s", tc.vs, got, tc.want)
		}
	}
	cells := Judge(Facts{})
	if len(cells) != 16 {
		t.Fatalf("%d cells, want 16", len(cells))
	}
	for _, c := range cells {
		if len(c.Requirements) == 0 || c.LevelName == "" {
			t.Errorf("cell %s %d: %+v", c.Area, c.Level, c)
		}
	}
}

// The tally is the line the pack's README and `millctl evidence pack`
// print: every verdict counted, zeros too, in a fixed order.
func TestTally(t *testing.T) {
	cells := []Cell{{Verdict: NotMet}, {Verdict: Met}, {Verdict: NotMet}, {Verdict: Met}, {Verdict: Met}}
	if got, want := Tally(cells), "3 met, 0 partial, 2 not met, 0 not evidenced"; got != want {
		t.Errorf("Tally = %q, want %q", got, want)
	}
	if got, want := Tally(nil), "0 met, 0 partial, 0 not met, 0 not evidenced"; got != want {
		t.Errorf("Tally(nil) = %q, want %q", got, want)
	}
}
