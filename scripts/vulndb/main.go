// Command vulndb keeps the offline snapshot of the Go vulnerability
// database that `make lint` scans with when vuln.go.dev cannot be reached
// (CI machines and these build hosts have no route to it).
//
//	go run ./scripts/vulndb snapshot -from DIR [-source TEXT] [-out FILE]
//	go run ./scripts/vulndb extract [-in FILE] -dir DIR
//
// snapshot reads the OSV entries in DIR (the data/osv directory of a
// golang/vulndb checkout, or the ID directory of a vuln.go.dev mirror) and
// writes the ones that affect this module's dependency graph (`go list -m
// all`), the standard library or the toolchain, one JSON object per line,
// after a header line naming the source and the modules considered.
//
// extract writes the snapshot's entries into DIR as <ID>.json files, the
// flat layout govulncheck accepts with -db file://DIR, and warns about
// modules of the current graph the snapshot did not consider (added since:
// refresh the snapshot).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

const defaultSnapshot = "scripts/vulndb/snapshot.jsonl"

// header is the first line of a snapshot.
type header struct {
	Source  string    `json:"source"`
	Written time.Time `json:"written"`
	Entries int       `json:"entries"`
	Modules []string  `json:"modules"`
}

// entry is the part of an OSV entry the snapshot looks at; the entry is
// kept whole.
type entry struct {
	ID       string     `json:"id"`
	Affected []affected `json:"affected"`
}

type affected struct {
	Package struct {
		Name string `json:"name"`
	} `json:"package"`
	Module struct { // the vuln.go.dev v1 spelling
		Path string `json:"path"`
	} `json:"module"`
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "snapshot":
		err = snapshot(os.Args[2:])
	case "extract":
		err = extract(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulndb:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: vulndb snapshot -from DIR [-source TEXT] [-out FILE] | vulndb extract [-in FILE] -dir DIR")
	os.Exit(2)
}

// modules lists the module paths of the current build graph.
func modules() ([]string, error) {
	out, err := exec.Command("go", "list", "-m", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m all: %w", err)
	}
	var mods []string
	for line := range strings.Lines(string(out)) {
		if f := strings.Fields(line); len(f) > 0 {
			mods = append(mods, f[0])
		}
	}
	sort.Strings(mods)
	return mods, nil
}

func snapshot(args []string) error {
	fs := flag.NewFlagSet("snapshot", flag.ExitOnError)
	from := fs.String("from", "", "directory of OSV <ID>.json entries")
	source := fs.String("source", "", "where the entries came from (recorded in the header)")
	out := fs.String("out", defaultSnapshot, "snapshot file to write")
	_ = fs.Parse(args)
	if *from == "" {
		return errors.New("snapshot: -from is required")
	}
	mods, err := modules()
	if err != nil {
		return err
	}
	want := map[string]bool{"stdlib": true, "toolchain": true}
	for _, m := range mods {
		want[m] = true
	}
	files, err := filepath.Glob(filepath.Join(*from, "*.json"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("snapshot: no .json entries in %s", *from)
	}
	sort.Strings(files)
	var lines [][]byte
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if e.ID == "" || filepath.Base(f) != e.ID+".json" {
			return fmt.Errorf("%s: not an OSV entry named <ID>.json", f)
		}
		if !slices.ContainsFunc(e.Affected, func(a affected) bool {
			return want[a.Package.Name] || want[a.Module.Path]
		}) {
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		lines = append(lines, compact.Bytes())
	}
	h, err := json.Marshal(header{Source: *source, Written: time.Now().UTC().Truncate(time.Second), Entries: len(lines), Modules: mods})
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.Write(h)
	b.WriteByte('\n')
	for _, l := range lines {
		b.Write(l)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(*out, b.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("vulndb: %d of %d entries affect the %d modules of this build, the standard library or the toolchain; wrote %s\n",
		len(lines), len(files), len(mods), *out)
	return nil
}

func extract(args []string) error {
	fs := flag.NewFlagSet("extract", flag.ExitOnError)
	in := fs.String("in", defaultSnapshot, "snapshot file")
	dir := fs.String("dir", "", "directory to write <ID>.json entries into")
	_ = fs.Parse(args)
	if *dir == "" {
		return errors.New("extract: -dir is required")
	}
	f, err := os.Open(*in)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	if !sc.Scan() {
		return fmt.Errorf("%s: empty snapshot", *in)
	}
	var h header
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Written.IsZero() {
		return fmt.Errorf("%s:1: not a snapshot header: %v", *in, err)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	n := 0
	for line := 2; sc.Scan(); line++ {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.ID == "" {
			return fmt.Errorf("%s:%d: not an OSV entry: %v", *in, line, err)
		}
		if err := os.WriteFile(filepath.Join(*dir, e.ID+".json"), sc.Bytes(), 0o644); err != nil {
			return err
		}
		n++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if n != h.Entries {
		return fmt.Errorf("%s: header says %d entries, found %d", *in, h.Entries, n)
	}
	fmt.Printf("vulndb: offline snapshot of %s, filtered %s: %d entries\n",
		h.Source, h.Written.Format(time.DateOnly), n)
	mods, err := modules()
	if err != nil {
		return err
	}
	var missing []string
	for _, m := range mods {
		if _, ok := slices.BinarySearch(h.Modules, m); !ok {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		fmt.Printf("vulndb: WARNING: the snapshot predates %d module(s) of this build (%s); refresh it (scripts/govulncheck.sh --help)\n",
			len(missing), strings.Join(missing, ", "))
	}
	return nil
}
