package pack

import (
	"bytes"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/millfleet/mill/pkg/ndsa"
)

// oneLine makes s safe on one line of a text file: control characters
// (newlines, terminal escapes) are written as Go escapes.
func oneLine(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			b.WriteString(strings.Trim(fmt.Sprintf("%q", r), "'"))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// mdEscape makes s literal text in a Markdown table cell: no markup, no
// HTML, no cell or line break.
var mdEscape = strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", ">", "&gt;", "&", "&amp;", "`", "\\`",
	"*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "#", `\#`)

func md(s string) string { return mdEscape.Replace(oneLine(s)) }

// symbol marks a verdict in the matrix: its text, NOT MET in capitals so
// that it stands out; a value that is no verdict reads as not evidenced.
func symbol(v ndsa.Verdict) string {
	switch v {
	case ndsa.NotMet:
		return strings.ToUpper(string(v))
	case ndsa.Met, ndsa.Partial:
		return string(v)
	}
	return string(ndsa.NotEvidenced)
}

// matrix is ndsa.md: the matrix at a glance, then each cell's
// requirements with their verdicts, reasons and files.
func (pk *Pack) matrix() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# NDSA Levels of Digital Preservation v2.0: %s\n\n", md(pk.Period.Name))
	b.WriteString("| Area |")
	for l := 1; l <= 4; l++ {
		fmt.Fprintf(&b, " Level %d: %s |", l, ndsa.LevelNames[l])
	}
	b.WriteString("\n|---|---|---|---|---|\n")
	for _, a := range ndsa.Areas {
		fmt.Fprintf(&b, "| %s |", a)
		for _, c := range pk.Cells {
			if c.Area == a {
				fmt.Fprintf(&b, " %s |", symbol(c.Verdict))
			}
		}
		b.WriteString("\n")
	}
	b.WriteString("\nA cell is met when every requirement Mill can evidence is met, not met when none is, partial otherwise. " +
		"Requirements marked \"not evidenced\" are outside what Mill observes and do not count.\n")
	for _, c := range pk.Cells {
		fmt.Fprintf(&b, "\n## %s, level %d (%s): %s\n\nFiles: %s\n\n", c.Area, c.Level, c.LevelName, symbol(c.Verdict), fileList(Files(c.Sources())))
		b.WriteString("| Requirement | Verdict | Why | Files |\n|---|---|---|---|\n")
		for _, r := range c.Requirements {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", md(r.Text), symbol(r.Verdict), md(r.Why), fileList(Files(r.Sources)))
		}
	}
	return b.Bytes()
}

func fileList(fs []string) string {
	if len(fs) == 0 {
		return "-"
	}
	return "`" + strings.Join(fs, "`, `") + "`"
}

// readme is README.md: what the bundle is and what each file holds.
func (pk *Pack) readme() []byte {
	var b bytes.Buffer
	p := pk.Period
	fmt.Fprintf(&b, "# Mill evidence pack: %s\n\n", md(p.Name))
	fmt.Fprintf(&b, "Period: %s (inclusive) to %s (exclusive), UTC. Made %s.\n\n",
		p.Since.Format("2006-01-02T15:04:05Z"), p.Until.Format("2006-01-02T15:04:05Z"), pk.Generated.Format("2006-01-02T15:04:05Z"))
	b.WriteString(`This bundle is the evidence Mill, a preservation fleet, holds for the
period: what it copied, checked, repaired and deleted, where the copies
are, and how the NDSA Levels of Digital Preservation (v2.0) judge it. It
is read offline; every figure in it was measured by Mill from its own
records, none was typed in.

## Verdicts

`)
	fmt.Fprintf(&b, "Of %d NDSA cells (Storage, Integrity, Control, Metadata; levels 1 to 4): %s. See `%s`.\n\n",
		len(pk.Cells), ndsa.Tally(pk.Cells), FileMatrix)
	b.WriteString("Evidence log: ")
	b.Write(bytes.SplitN(pk.verification(), []byte("\n"), 2)[0])
	b.WriteString("\n\n## Files\n\n")
	for _, f := range [][2]string{
		{FileMatrix, "The NDSA matrix: a verdict per cell (met, partial, not met, not evidenced), then each cell's requirements with the reason for each verdict and the files behind it."},
		{FileMatrixJSON, "The same matrix as JSON, for tools."},
		{FileCheckpoint, "The evidence log's latest signed checkpoint (a C2SP tlog-checkpoint: the log's name, its size in events, its Merkle root, and an Ed25519 signature). Absent when the log has none."},
		{FileKey, "The public verifier key the checkpoint is signed with (its name is the log's name). Get it from Mill's operators through another channel and compare it with this copy before trusting either."},
		{FileVerification, "The evidence log's verification when the pack was made: every checkpoint's signature, the consistency of successive checkpoints (no history rewritten), every event against the signed tree. OK, or each problem named."},
		{FileCoverage, "Fixity coverage of every space of every store, as measured when the pack was made from Mill's bit log and content index: copies (live items), how many have a fresh verdict within the store's interval (Within), overdue, never verified, not covered, failed; the oldest verdict; the target (interval and method)."},
		{FileCopies, "Copies per space: each store holding the space with its kind, provider, region and threat zone (from the store registry), its live items, whether it is complete (as many items as the fullest copy), and its newest verdicts by storage class (readable or archival)."},
		{FilePolicies, "The duplication policies in force for each active account (which stores Mill copies each space to), or the rule that keeps an account from having one."},
		{FileHistory, "The history of the policies and the store registry up to the period's end, newest first: who changed what, when, with which role, and the file versions before and after."},
		{FileEvents, "The period's events in the evidence log, counted by PREMIS event type and outcome and by agent; repairs and whether a fixity check confirmed each; copies found corrupt and whether they were repaired."},
		{FileSums, "The SHA-256 of every other file (sha256sum -c SHA256SUMS)."},
	} {
		fmt.Fprintf(&b, "- `%s`: %s\n", f[0], f[1])
	}
	fmt.Fprintf(&b, `
## Checking it yourself

With the evidence bucket (or a copy of it) and the public key:

    sha256sum -c SHA256SUMS
    millctl evidence verify --log s3://BUCKET/PREFIX --key verifier-key.txt
    millctl evidence events --log s3://BUCKET/PREFIX --key verifier-key.txt --since %s --until %s --format premis-xml

`, p.Since.Format(time.RFC3339), p.Until.Format(time.RFC3339))
	b.WriteString(`The first repeats the verification; the second exports the period's
events as PREMIS 3 XML, whose counts are those of events-summary.json.
A single event's proof ('millctl evidence proof') can be checked with
the key alone ('millctl evidence check-proof').

## What this pack does not show

The log proves what Mill recorded and in what order, not that every
action was recorded, nor that the recorded observations are true. Fixity
coverage is as of when the pack was made (the newest verdict of each
copy), not as of the period's end. Requirements outside Mill (virus
checks, write-blockers, obsolescence plans, access control outside Mill,
descriptive metadata) are listed as not evidenced.
`)
	if len(pk.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range pk.Notes {
			fmt.Fprintf(&b, "- %s\n", md(n))
		}
	}
	return b.Bytes()
}
