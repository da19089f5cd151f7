package benchtable

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRowsNameBenchmarksInTheTree: every row names a package of the module
// that defines a benchmark its Name matches, so a benchmark that moves
// (or is renamed) fails here instead of showing as n/a in the next
// make bench's table.
func TestRowsNameBenchmarksInTheTree(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	decl := regexp.MustCompile(`(?m)^func (Benchmark\w*)\(b \*testing\.B\)`)
	for _, r := range Rows {
		files, err := testFiles(filepath.Join(root, filepath.FromSlash(r.Pkg)), strings.HasSuffix(r.Pkg, "/"))
		if err != nil || len(files) == 0 {
			t.Errorf("%q: package %s has no test files (%v)", r.Measure, r.Pkg, err)
			continue
		}
		var names []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
				names = append(names, m[1])
			}
		}
		found := false
		for _, n := range names {
			// A row's Name may name a sub-benchmark: match its top level.
			if r.Name.MatchString(n) || strings.HasPrefix(r.Name.String(), "^"+n+"/") {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: no benchmark of %s matches %s (it has %v)", r.Measure, r.Pkg, r.Name, names)
		}
	}
}

// testFiles lists dir's test files, and its subtree's when deep (a row's
// Pkg ending in "/").
func testFiles(dir string, deep bool) ([]string, error) {
	if !deep {
		return filepath.Glob(filepath.Join(dir, "*_test.go"))
	}
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, "_test.go") {
			out = append(out, path)
		}
		return err
	})
	return out, err
}
