package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/millfleet/mill"

// Layers, from the bottom up. A package's layer is that of the longest
// folder prefix below that names it (docs/ARCHITECTURE.md, Repository
// layout).
const (
	base       = "base"       // internal/base: leaf helpers, import nothing of Mill
	vocabulary = "vocabulary" // the domain's words: tasks, queues, storage, clocks
	domain     = "domain"     // pkg: ports, models, their implementations
	workers    = "workers"    // processors, producers, pkg/workman: the work
	ops        = "ops"        // internal/ops: read models and setup for operators
	wiring     = "wiring"     // internal/wiring: the composition root
	shell      = "shell"      // internal/cli: what the commands share
	app        = "app"        // internal/app: the console, the dev mode
	command    = "cmd"        // cmd: the mains
	testkit    = "testkit"    // internal/testkit: test support
	tests      = "tests"      // test, infra: suites that only test
	tools      = "tools"      // scripts: build and bench tools
)

// folders maps a folder (relative to the module) to its layer.
var folders = map[string]string{
	"internal/base":    base,
	"pkg/blob":         base, // a leaf port (imports nothing of Mill) under storage's checkpoints; its implementations are domain
	"pkg/clock":        vocabulary,
	"pkg/endpoint":     vocabulary,
	"pkg/queue":        vocabulary, // the package itself; its sub-packages are domain
	"pkg/storage":      vocabulary, // likewise
	"pkg/task":         vocabulary,
	"pkg/tsv":          vocabulary,
	"pkg":              domain,
	"pkg/workman":      workers,
	"processors":       workers,
	"producers":        workers,
	"internal/ops":     ops,
	"internal/wiring":  wiring,
	"internal/cli":     shell,
	"internal/app":     app,
	"cmd":              command,
	"internal/testkit": testkit,
	"test":             tests,
	"infra":            tests,
	"scripts":          tools,
}

// exact lists folders whose layer is their own package only, not their
// sub-packages'.
var exact = map[string]bool{"pkg/blob": true, "pkg/queue": true, "pkg/storage": true}

// may says which layers a layer's packages may import (besides the
// standard library and modules). Test files and test-support packages
// (named …test) may also import the test kit.
var may = map[string][]string{
	base:       {base},
	vocabulary: {base},
	domain:     {base, vocabulary, domain},
	workers:    {base, vocabulary, domain, workers},
	ops:        {base, vocabulary, domain, ops},
	wiring:     {base, vocabulary, domain, workers, ops, wiring},
	shell:      {base, vocabulary, domain, workers, ops, wiring, shell},
	app:        {base, vocabulary, domain, workers, ops, wiring, app},
	command:    {base, vocabulary, domain, workers, ops, wiring, shell, app},
	testkit:    {base, vocabulary, domain, workers, ops, wiring, testkit},
	tests:      {base, vocabulary, domain, workers, ops, wiring, shell, app, command, testkit, tests},
	tools:      {base, testkit},
}

// exceptions are the arrows that run up on purpose, importer → imported
// (module-relative), each with its reason. Keep it at most three, each
// explained in docs/ARCHITECTURE.md, Repository layout.
var exceptions = map[[2]string]string{}

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Name         string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

// layerOf returns the layer of a module-relative path, or "".
func layerOf(rel string) string {
	for dir := rel; ; {
		if l, ok := folders[dir]; ok && (dir == rel || !exact[dir]) {
			return l
		}
		i := strings.LastIndexByte(dir, '/')
		if i < 0 {
			return ""
		}
		dir = dir[:i]
	}
}

// listPackages runs go list over the module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Name,Imports,TestImports,XTestImports,Error", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var ps []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		ps = append(ps, p)
	}
	if len(ps) < 50 {
		t.Fatalf("go list found %d packages; want the whole module", len(ps))
	}
	return ps
}

// arrow is one import that breaks the table.
type arrow struct{ from, to, fromLayer, toLayer, why string }

func (a arrow) String() string {
	return fmt.Sprintf("%s (%s) → %s (%s): %s", a.from, a.fromLayer, a.to, a.toLayer, a.why)
}

// check returns the arrows of ps that the table does not allow.
func check(ps []pkg) (bad []arrow, unplaced []string) {
	for _, p := range ps {
		from, ok := strings.CutPrefix(p.ImportPath, module+"/")
		if !ok {
			continue
		}
		fl := layerOf(from)
		if fl == "" {
			unplaced = append(unplaced, from)
			continue
		}
		support := strings.HasSuffix(p.Name, "test") || fl == testkit || fl == tests || fl == tools
		seen := map[string]bool{}
		visit := func(imp string, inTest bool) {
			to, ok := strings.CutPrefix(imp, module+"/")
			if !ok || to == from || seen[to] {
				return
			}
			tl := layerOf(to)
			switch {
			case tl == "":
				return // reported as unplaced when listed
			case tl == testkit:
				if inTest || support {
					return
				}
				bad = append(bad, arrow{from, to, fl, tl, "the test kit is for tests and test-support packages only"})
			case inTest:
				return // a test may use what its package may not (the test kit included)
			case !slices.Contains(may[fl], tl):
				if _, ok := exceptions[[2]string{from, to}]; ok {
					return
				}
				bad = append(bad, arrow{from, to, fl, tl, fmt.Sprintf("%s may import only %s", fl, strings.Join(may[fl], ", "))})
			default:
				return
			}
			seen[to] = true
		}
		for _, imp := range p.Imports {
			visit(imp, false)
		}
		for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
			visit(imp, true)
		}
	}
	return bad, unplaced
}

// TestImportDirections fails on every import that runs up the layers.
func TestImportDirections(t *testing.T) {
	ps := listPackages(t)
	bad, unplaced := check(ps)
	for _, u := range unplaced {
		t.Errorf("%s is in no layer: add its folder to the table in test/layers", u)
	}
	for _, a := range bad {
		t.Errorf("import runs up: %s", a)
	}
	if len(bad) > 0 {
		t.Logf("%d upward arrow(s); move the code to its layer or invert the dependency (docs/ARCHITECTURE.md, Repository layout)", len(bad))
	}
	// Every exception must still be needed, or it is a hole in the table.
	for e := range exceptions {
		if !importsDirectly(ps, e[0], e[1]) {
			t.Errorf("exception %s → %s is no longer used: remove it", e[0], e[1])
		}
	}
	if len(exceptions) > 3 {
		t.Errorf("%d exceptions; at most 3", len(exceptions))
	}
}

func importsDirectly(ps []pkg, from, to string) bool {
	for _, p := range ps {
		if p.ImportPath == module+"/"+from {
			return slices.Contains(p.Imports, module+"/"+to)
		}
	}
	return false
}

// TestTableCatchesUpwardArrows: the check itself, on made-up packages.
func TestTableCatchesUpwardArrows(t *testing.T) {
	m := func(rel string) string { return module + "/" + rel }
	ps := []pkg{
		{ImportPath: m("pkg/task"), Name: "task", Imports: []string{m("internal/wiring"), "fmt"}},
		{ImportPath: m("pkg/task"), Name: "task", Imports: []string{m("pkg/storage")}},
		{ImportPath: m("pkg/fleet"), Name: "fleet", Imports: []string{m("processors"), m("pkg/clock"), m("internal/base/validate")}},
		{ImportPath: m("pkg/queue/sqsqueue"), Name: "sqsqueue", Imports: []string{m("pkg/queue")}, TestImports: []string{m("internal/testkit/testenv")}},
		{ImportPath: m("pkg/notify/notifytest"), Name: "notifytest", Imports: []string{m("internal/testkit/testenv")}},
		{ImportPath: m("pkg/notify"), Name: "notify", Imports: []string{m("internal/testkit/testenv")}},
		{ImportPath: m("internal/app/console"), Name: "console", Imports: []string{m("internal/ops/queuestats"), m("pkg/workman")}},
		{ImportPath: m("internal/ops/setup"), Name: "setup", Imports: []string{m("internal/app/console")}},
		{ImportPath: m("newfolder/x"), Name: "x"},
	}
	bad, unplaced := check(ps)
	var got []string
	for _, a := range bad {
		got = append(got, a.from+" → "+a.to)
	}
	want := []string{
		"pkg/task → internal/wiring",
		"pkg/task → pkg/storage",
		"pkg/fleet → processors",
		"pkg/notify → internal/testkit/testenv",
		"internal/ops/setup → internal/app/console",
	}
	if !slices.Equal(got, want) {
		t.Errorf("upward arrows:\n got %q\nwant %q", got, want)
	}
	if !slices.Equal(unplaced, []string{"newfolder/x"}) {
		t.Errorf("unplaced = %q, want newfolder/x", unplaced)
	}
}
