// Package ndsa judges the cells of the NDSA Levels of Digital Preservation
// (version 2.0, 2019) that Mill can evidence: the Storage, Integrity,
// Control and Metadata functional areas at levels 1 to 4 (Content — file
// formats — is outside what Mill observes). Judge turns Facts, which the
// evidence pack (pkg/evidence/pack) gathers from the store registry, the
// content index, the bit log, the evidence log and the policies, into a
// verdict per cell: met, partial, not met, or not evidenced.
//
// A cell lists its requirements (the Levels' statements, named here in
// short) each with a verdict, the reason for it and the Sources behind it
// (which the pack maps to files of the bundle). A requirement Mill cannot
// observe (a virus check, write-blockers, an obsolescence plan) is "not
// evidenced": listed, with what would evidence it, and left out of the
// cell's verdict. A cell is met when every evidenced requirement is, not
// met when none is, partial otherwise; not evidenced when none of its
// requirements can be.
//
// Copies are judged per space, and a space's copy counts only when it is
// complete: its store holds as many live items of the space as the
// fullest copy (the content index's rows). A store's region, provider and
// threatZone come from the registry (accounts.json); a copy whose store
// leaves one unset is not counted as different from the others in that
// respect. Two copies in one region do not meet the geographic
// requirement; three in three threatZones meet "each with a different
// disaster threat".
package ndsa

import (
	"fmt"
	"slices"
	"strings"
)

// Verdict is a cell's or a requirement's verdict.
type Verdict string

// The verdicts; each is also its own text in the pack and millctl's output.
const (
	Met          Verdict = "met"
	Partial      Verdict = "partial"
	NotMet       Verdict = "not met"
	NotEvidenced Verdict = "not evidenced"
)

// Tally counts cells by verdict, every verdict in this order:
// "6 met, 10 partial, 0 not met, 0 not evidenced".
func Tally(cells []Cell) string {
	counts := map[Verdict]int{}
	for _, c := range cells {
		counts[c.Verdict]++
	}
	var parts []string
	for _, v := range []Verdict{Met, Partial, NotMet, NotEvidenced} {
		parts = append(parts, fmt.Sprintf("%d %s", counts[v], v))
	}
	return strings.Join(parts, ", ")
}

// Area is a functional area of the Levels.
type Area string

// The areas Mill can evidence.
const (
	Storage   Area = "Storage"
	Integrity Area = "Integrity"
	Control   Area = "Control"
	Metadata  Area = "Metadata"
)

// Areas in the matrix's order.
var Areas = []Area{Storage, Integrity, Control, Metadata}

// LevelNames are the names of levels 1 to 4 (index 0 unused).
var LevelNames = [5]string{"", "Know your content", "Protect your content", "Monitor your content", "Sustain your content"}

// Source is a kind of evidence a verdict rests on; the pack maps each to
// a file of the bundle.
type Source string

// The sources.
const (
	SourceCopies       Source = "copies"       // copies per space with their stores' places
	SourceCoverage     Source = "coverage"     // fixity coverage
	SourceEvents       Source = "events"       // the events summary of the period
	SourceCheckpoint   Source = "checkpoint"   // the signed checkpoint and its key
	SourceVerification Source = "verification" // the evidence log's verification
	SourcePolicies     Source = "policies"     // the policies in force
	SourceHistory      Source = "history"      // the policies' change history
)

// Copy is one store's copy of a space.
type Copy struct {
	Store                        string // "account/store"
	Provider, Region, ThreatZone string // "" when the registry does not say
	// Media is the kind of storage ("s3", "fs") and, when known, the
	// storage classes of its items ("s3:GLACIER").
	Media string
	// Items counts the copy's live items (content-index rows).
	Items int64
}

// Space is one space and its copies.
type Space struct {
	Account, Space string
	Copies         []Copy
}

// Facts are what the pack observed.
type Facts struct {
	Spaces []Space
	// ActiveAccounts counts the registry's active accounts;
	// PolicyAccounts those of them with a duplication policy in force.
	ActiveAccounts, PolicyAccounts int
	// PolicyChanges counts the changes of the policies recorded up to
	// the period's end.
	PolicyChanges int
	// Fixity coverage totals (pkg/fixity) over every space.
	Copies, Within, NeverVerified int64
	// Events of the period (from the evidence log).
	Events                     int64
	FixityChecks, FixityFailed int64
	Replications, Deletions    int64
	Repairs, RepairsVerified   int64 // repairs; those followed by a successful fixity check of the copy
	CorruptCopies, Unrepaired  int64 // copies with a failed check; those without a later successful repair
	Checkpoint, LogVerified    bool  // a signed checkpoint; the whole log verified with the public key
	LogProblems                int   // what verification named
}

// Requirement is one statement of a cell.
type Requirement struct {
	Text    string   `json:"requirement"`
	Verdict Verdict  `json:"verdict"`
	Why     string   `json:"why"`
	Sources []Source `json:"sources,omitempty"`
}

// Cell is one cell of the matrix.
type Cell struct {
	Area         Area          `json:"area"`
	Level        int           `json:"level"`
	LevelName    string        `json:"levelName"`
	Verdict      Verdict       `json:"verdict"`
	Requirements []Requirement `json:"requirements"`
}

// Sources lists the sources of the cell's requirements, once each.
func (c Cell) Sources() []Source {
	var out []Source
	for _, r := range c.Requirements {
		for _, s := range r.Sources {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// combine is a cell's verdict from its requirements'.
func combine(rs []Requirement) Verdict {
	var met, not, n int
	for _, r := range rs {
		switch r.Verdict {
		case NotEvidenced:
			continue
		case Met:
			met++
		case NotMet:
			not++
		}
		n++
	}
	switch {
	case n == 0:
		return NotEvidenced
	case met == n:
		return Met
	case not == n:
		return NotMet
	}
	return Partial
}

// Judge returns the 16 cells, area by area, level by level.
func Judge(f Facts) []Cell {
	reqs := map[Area][5][]Requirement{
		Storage:   storage(f),
		Integrity: integrity(f),
		Control:   control(f),
		Metadata:  metadata(f),
	}
	var cells []Cell
	for _, a := range Areas {
		for level := 1; level <= 4; level++ {
			rs := reqs[a][level]
			cells = append(cells, Cell{Area: a, Level: level, LevelName: LevelNames[level], Verdict: combine(rs), Requirements: rs})
		}
	}
	return cells
}

func req(text string, v Verdict, why string, src ...Source) Requirement {
	return Requirement{Text: text, Verdict: v, Why: why, Sources: src}
}

func notEvidenced(text, why string) Requirement { return req(text, NotEvidenced, why) }

// share is a verdict from how many of n things pass: all met, none not
// met, some partial (n == 0: not met).
func share(ok, n int64) Verdict {
	switch {
	case n > 0 && ok == n:
		return Met
	case ok > 0:
		return Partial
	}
	return NotMet
}

// list names up to five things and how many more.
func list(xs []string) string {
	if len(xs) <= 5 {
		return strings.Join(xs, ", ")
	}
	return strings.Join(xs[:5], ", ") + fmt.Sprintf(" and %d more", len(xs)-5)
}
