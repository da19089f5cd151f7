package pack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/ndsa"
)

// The bundle's files.
const (
	FileReadme       = "README.md"
	FileMatrix       = "ndsa.md"
	FileMatrixJSON   = "ndsa.json"
	FileCheckpoint   = "checkpoint.txt"
	FileKey          = "verifier-key.txt"
	FileVerification = "verification.txt"
	FileCoverage     = "fixity-coverage.json"
	FileCopies       = "copies.json"
	FilePolicies     = "policies.json"
	FileHistory      = "policy-history.json"
	FileEvents       = "events-summary.json"
	FileSums         = "SHA256SUMS"
)

// sourceFiles are the files behind each kind of NDSA evidence.
var sourceFiles = map[ndsa.Source][]string{
	ndsa.SourceCopies:       {FileCopies},
	ndsa.SourceCoverage:     {FileCoverage},
	ndsa.SourceEvents:       {FileEvents},
	ndsa.SourceCheckpoint:   {FileCheckpoint, FileKey},
	ndsa.SourceVerification: {FileVerification},
	ndsa.SourcePolicies:     {FilePolicies},
	ndsa.SourceHistory:      {FileHistory},
}

// Files returns the bundle files behind sources, once each.
func Files(sources []ndsa.Source) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range sources {
		for _, f := range sourceFiles[s] {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	return out
}

// Name is the bundle's file name: the period and when it was made.
func (pk *Pack) Name() string {
	return "mill-evidence-" + pk.Period.Name + "-" + pk.Generated.Format("20060102T150405Z") + ".tar.gz"
}

// Dir is the directory the bundle's files are in.
func (pk *Pack) Dir() string { return "mill-evidence-" + pk.Period.Name }

// file is one file of the bundle.
type file struct {
	name string
	data []byte
}

// Contents returns the bundle's files in order, SHA256SUMS last.
func (pk *Pack) Contents() ([]file, error) {
	var files []file
	addJSON := func(name string, v any) error {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("pack: %s: %w", name, err)
		}
		files = append(files, file{name, append(b, '\n')})
		return nil
	}
	files = append(files, file{FileReadme, pk.readme()}, file{FileMatrix, pk.matrix()})
	if err := addJSON(FileMatrixJSON, pk.matrixJSON()); err != nil {
		return nil, err
	}
	if r := pk.Verification; r != nil && r.Latest != nil {
		files = append(files, file{FileCheckpoint, r.Latest.Signed})
	}
	files = append(files, file{FileKey, []byte(pk.VerifierKey + "\n")}, file{FileVerification, pk.verification()})
	type coverage struct {
		fixity.Coverage
		MaxLate string `json:"MaxLate"`
	}
	var covs []coverage
	for _, c := range pk.Coverage {
		covs = append(covs, coverage{c, c.MaxLate.String()})
	}
	policies, err := pk.policiesJSON()
	if err != nil {
		return nil, err
	}
	for _, j := range []struct {
		name string
		v    any
	}{{FileCoverage, covs}, {FileCopies, pk.Copies}, {FilePolicies, policies}, {FileHistory, pk.History}, {FileEvents, pk.Events}} {
		if err := addJSON(j.name, j.v); err != nil {
			return nil, err
		}
	}
	var sums bytes.Buffer
	for _, f := range files {
		h := sha256.Sum256(f.data)
		fmt.Fprintf(&sums, "%s  %s\n", hex.EncodeToString(h[:]), f.name)
	}
	return append(files, file{FileSums, sums.Bytes()}), nil
}

// policiesJSON is policies.json: each active account's policy in force
// (as its file writes it) or the rule that keeps it from having one.
func (pk *Pack) policiesJSON() (any, error) {
	type entry struct {
		AccountPolicy
		Policy json.RawMessage `json:"policy,omitempty"`
	}
	out := []entry{}
	for _, p := range pk.Policies {
		e := entry{AccountPolicy: p}
		if p.Policy != nil {
			b, err := p.Policy.Marshal()
			if err != nil {
				return nil, fmt.Errorf("pack: policy of %q: %w", p.Account, err)
			}
			e.Policy = b
		}
		out = append(out, e)
	}
	return out, nil
}

// matrixJSON is ndsa.json: the cells with the files behind each
// requirement.
func (pk *Pack) matrixJSON() any {
	type requirement struct {
		ndsa.Requirement
		Files []string `json:"files"`
	}
	type cell struct {
		ndsa.Cell
		Requirements []requirement `json:"requirements"`
		Files        []string      `json:"files"`
	}
	out := struct {
		Framework string `json:"framework"`
		Period    string `json:"period"`
		Cells     []cell `json:"cells"`
	}{Framework: "NDSA Levels of Digital Preservation v2.0", Period: pk.Period.Name}
	for _, c := range pk.Cells {
		jc := cell{Cell: c, Files: Files(c.Sources())}
		for _, r := range c.Requirements {
			jc.Requirements = append(jc.Requirements, requirement{r, Files(r.Sources)})
		}
		out.Cells = append(out.Cells, jc)
	}
	return out
}

// verification is verification.txt.
func (pk *Pack) verification() []byte {
	var b bytes.Buffer
	r := pk.Verification
	switch {
	case r == nil:
		fmt.Fprintf(&b, "NOT VERIFIED: the evidence log could not be read: %s\n", pk.VerifyError)
	case r.Latest == nil:
		fmt.Fprintln(&b, "NOT VERIFIED: the evidence log has no checkpoint (empty, or not an evidence log)")
	case r.OK():
		fmt.Fprintf(&b, "OK: %d signed checkpoints, %d events, latest checkpoint: %s size %d\n", r.Checkpoints, r.Leaves, r.Latest.Origin, r.Latest.Size)
	default:
		fmt.Fprintf(&b, "FAILED: %d problems (%d signed checkpoints, %d events checked)\n", len(r.Problems), r.Checkpoints, r.Leaves)
	}
	if r != nil {
		for _, p := range r.Problems {
			fmt.Fprintf(&b, "problem: %s\n", oneLine(p.String()))
		}
	}
	if pk.Events.Error != "" {
		fmt.Fprintf(&b, "events: %s\n", oneLine(pk.Events.Error))
	}
	return b.Bytes()
}

// WriteTarGz writes the bundle as a gzip-compressed tar of one directory
// (Dir), every file stamped with the time the pack was made.
func (pk *Pack) WriteTarGz(w io.Writer) error {
	files, err := pk.Contents()
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	zw.ModTime = pk.Generated
	tw := tar.NewWriter(zw)
	mod := pk.Generated.Truncate(time.Second)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: pk.Dir() + "/", Mode: 0o755, ModTime: mod, Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: pk.Dir() + "/" + f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: mod, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return zw.Close()
}
