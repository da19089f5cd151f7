package security

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testbin"
)

// sqlMethods are the pgx calls that take SQL text, with the index of the
// SQL argument.
var sqlMethods = map[string]int{
	"Exec": 1, "Query": 1, "QueryRow": 1, "QueryFunc": 1, "Prepare": 2,
}

// dynamicSQL is the reviewed list of SQL arguments that are not constant
// expressions, keyed by file (relative to the repository), function and
// argument text. Each entry says why it is safe; the test also checks the
// stated origin, and fails when an entry no longer matches any call.
var dynamicSQL = map[string]string{
	// The text of an embedded migration file (migrations/*.sql, go:embed):
	// compiled into the binary, never derived from input. The test checks
	// that sql is only ever assigned m.Up or m.Down.
	"pkg/milldb/migrate.go runStep sql": "m.Up m.Down",
	// One of four constant statements (sqlBitRecord, a [2][2]string of
	// literals), picked by two booleans; the values are $n parameters.
	"pkg/bitlog/pgbitlog/pgbitlog.go Record sql": "sqlBitRecord[…][…]",
	// One of four constant statements: the general listing, the listing of
	// one run's month, or one of the two of a space of a run
	// (sqlSpaceResults, literals, picked by an index); values are $n
	// parameters.
	"pkg/bitlog/pgbitlog/pgbitlog.go Results sql": "sqlBitResultsAll sqlSpaceResults[…] sqlBitResultsOfMonth",
	// One of four statements (sqlSearch, built once from constants and the
	// $n numbers of the bounds that apply), picked by two indexes; the
	// values are $n parameters.
	"pkg/contentindex/pgcontentindex/pgcontentindex.go Search sql": "sqlSearch[…][…]",
}

// sqlCall is one call passing SQL text.
type sqlCall struct {
	pos    string // file:line:col, file relative to the root
	file   string
	fn     string // enclosing function
	method string
	arg    string // the SQL argument's source text
	ok     bool   // the argument is a constant expression
	assign []string
}

// sqlFiles returns the non-test Go files of database code: pkg/milldb and
// every other production file that imports pgx (test support under
// internal/testkit/testenv and internal/testkit/pgcluster excluded: they are not shipped).
func sqlFiles(t *testing.T, root string) map[string][]string {
	t.Helper()
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || rel == "internal/testkit/testenv" || rel == "internal/testkit/pgcluster" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(rel, "pkg/milldb/") || strings.Contains(string(src), `"github.com/jackc/pgx/v5`) {
			byDir[filepath.Dir(rel)] = append(byDir[filepath.Dir(rel)], rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return byDir
}

// findSQLCalls parses the files of one package (paths relative to root)
// and returns every SQL-taking call.
func findSQLCalls(root string, files []string, src map[string]string) ([]sqlCall, error) {
	fset := token.NewFileSet()
	var parsed []*ast.File
	names := map[*ast.File]string{}
	for _, rel := range files {
		var body any
		if src != nil {
			body = src[rel]
		}
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), body, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, f)
		names[f] = rel
	}
	consts := map[string]bool{} // package-level constants
	for _, f := range parsed {
		for _, d := range f.Decls {
			collectConsts(d, consts)
		}
	}
	var calls []sqlCall
	for _, f := range parsed {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			local := map[string]bool{}
			for k := range consts {
				local[k] = true
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if ds, ok := n.(*ast.DeclStmt); ok {
					collectConsts(ds.Decl, local)
				}
				return true
			})
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				i, ok := sqlMethods[sel.Sel.Name]
				if !ok || len(call.Args) <= i {
					return true
				}
				arg := call.Args[i]
				p := fset.Position(arg.Pos())
				c := sqlCall{
					pos:  fmt.Sprintf("%s:%d:%d", names[f], p.Line, p.Column),
					file: names[f], fn: fd.Name.Name, method: sel.Sel.Name,
					arg: exprText(arg), ok: constExpr(arg, local),
				}
				if id, isIdent := arg.(*ast.Ident); isIdent && !c.ok {
					c.assign = assignments(fd.Body, id.Name)
				}
				calls = append(calls, c)
				return true
			})
		}
	}
	return calls, nil
}

func collectConsts(d ast.Decl, into map[string]bool) {
	gd, ok := d.(*ast.GenDecl)
	if !ok || gd.Tok != token.CONST {
		return
	}
	for _, s := range gd.Specs {
		for _, n := range s.(*ast.ValueSpec).Names {
			into[n.Name] = true
		}
	}
}

// constExpr reports whether e is built only from string literals and
// constants with +.
func constExpr(e ast.Expr, consts map[string]bool) bool {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x.Kind == token.STRING
	case *ast.Ident:
		return consts[x.Name]
	case *ast.ParenExpr:
		return constExpr(x.X, consts)
	case *ast.BinaryExpr:
		return x.Op == token.ADD && constExpr(x.X, consts) && constExpr(x.Y, consts)
	}
	return false
}

// assignments returns the source text of every value assigned to name in
// body (declarations included).
func assignments(body *ast.BlockStmt, name string) []string {
	var out []string
	ast.Inspect(body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == name && i < len(s.Rhs) {
					out = append(out, exprText(s.Rhs[i]))
				}
			}
		case *ast.ValueSpec:
			for i, id := range s.Names {
				if id.Name == name && i < len(s.Values) {
					out = append(out, exprText(s.Values[i]))
				}
			}
		}
		return true
	})
	return out
}

func exprText(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprText(x.X) + "." + x.Sel.Name
	case *ast.BasicLit:
		return x.Value
	case *ast.BinaryExpr:
		return exprText(x.X) + " " + x.Op.String() + " " + exprText(x.Y)
	case *ast.CallExpr:
		return exprText(x.Fun) + "(…)"
	case *ast.ParenExpr:
		return "(" + exprText(x.X) + ")"
	case *ast.IndexExpr:
		return exprText(x.X) + "[…]"
	}
	return fmt.Sprintf("%T", e)
}

// check returns the problems of calls against the reviewed list, and the
// reviewed entries that matched a call.
func check(calls []sqlCall, reviewed map[string]string) (problems []string, used map[string]bool) {
	used = map[string]bool{}
	for _, c := range calls {
		if c.ok {
			continue
		}
		key := c.file + " " + c.fn + " " + c.arg
		origins, ok := reviewed[key]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s(ctx, %s, …): SQL text is not a constant expression; pass values as $n parameters", c.pos, c.method, c.arg))
			continue
		}
		used[key] = true
		allowed := strings.Fields(origins)
		if len(c.assign) == 0 {
			problems = append(problems, fmt.Sprintf("%s: %s is reviewed as coming from %s, but no assignment was found", c.pos, c.arg, origins))
		}
		for _, a := range c.assign {
			if !slices.Contains(allowed, a) {
				problems = append(problems, fmt.Sprintf("%s: %s is assigned %s; reviewed origins are only %s", c.pos, c.arg, a, origins))
			}
		}
	}
	return problems, used
}

func TestSQLIsParameterised(t *testing.T) {
	root := testbin.ModuleRoot(t)
	byDir := sqlFiles(t, root)
	if len(byDir["pkg/milldb"]) == 0 {
		t.Fatal("no sources found in pkg/milldb")
	}
	var all []sqlCall
	for dir, files := range byDir {
		calls, err := findSQLCalls(root, files, nil)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		all = append(all, calls...)
	}
	problems, used := check(all, dynamicSQL)
	for _, p := range problems {
		t.Error(p)
	}
	for k := range dynamicSQL {
		if !used[k] {
			t.Errorf("reviewed dynamic SQL %q matches no call any more; remove it from dynamicSQL", k)
		}
	}
	// The scan must see the statements it is meant to guard.
	if n := len(all); n < 10 {
		t.Fatalf("found only %d SQL calls; the scan is not seeing pkg/milldb's queries", n)
	}
	t.Logf("%d SQL calls checked in %d packages; %d reviewed dynamic", len(all), len(byDir), len(used))
}

// TestSQLCheckerCatchesConcatenation runs the checker on a synthetic file
// so a broken checker cannot pass silently.
func TestSQLCheckerCatchesConcatenation(t *testing.T) {
	src := `package x

const table = "t"
const q = "SELECT 1 FROM " + table + " WHERE a = $1"

func f(ctx any, pool interface{ Exec(...any) (any, error); QueryRow(...any) any }, id, m struct{ Up string }) {
	const local = "DELETE FROM t"
	pool.Exec(ctx, q, 1)
	pool.Exec(ctx, local)
	pool.Exec(ctx, ("SELECT " + "2"))
	pool.Exec(ctx, "SELECT * FROM t WHERE id = '" + id + "'")
	pool.QueryRow(ctx, fmt.Sprintf("SELECT %s", id))
	sql := m.Up
	sql = strconv.Quote(sql)
	pool.Exec(ctx, sql)
	var s2 = "x" + id
	pool.Exec(ctx, s2)
}
`
	calls, err := findSQLCalls("/", []string{"x/x.go"}, map[string]string{"x/x.go": src})
	if err != nil {
		t.Fatal(err)
	}
	problems, used := check(calls, map[string]string{"x/x.go f sql": "m.Up"})
	want := []string{
		`x/x.go:11:17: Exec(ctx, "SELECT * FROM t WHERE id = '" + id + "'", …)`,
		`x/x.go:12:21: QueryRow(ctx, fmt.Sprintf(…), …)`,
		`x/x.go:15:17: sql is assigned strconv.Quote(…)`,
		`x/x.go:17:17: Exec(ctx, s2, …)`,
	}
	if len(problems) != len(want) || !used["x/x.go f sql"] {
		t.Fatalf("problems:\n%s\nwant %d starting with:\n%s", strings.Join(problems, "\n"), len(want), strings.Join(want, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(problems[i], w) {
			t.Errorf("problem %d = %s\nwant prefix %s", i, problems[i], w)
		}
	}
}
