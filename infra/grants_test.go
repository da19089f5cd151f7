package infra

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestWorkmanGrantsWhatItsClientsCall keeps workman.yaml's grants on the
// DynamoDB tables equal to the operations Workman's clients of them can
// call: every method of the client interface a package declares is granted
// (a missing one is AccessDenied on AWS only, never on the emulator), and
// nothing else is (least privilege). The audit log's client is used whole
// by Workman's processors: the audit processor puts and queries, the bit
// processor's case 5 replaces an entry (put, then delete).
func TestWorkmanGrantsWhatItsClientsCall(t *testing.T) {
	body := readTemplate(t, "workman.yaml")
	for _, c := range []struct{ sid, file, iface string }{
		{"AuditLog", "../pkg/auditlog/dynamoauditlog/dynamo.go", "API"},
	} {
		want := interfaceMethods(t, c.file, c.iface)
		for i := range want {
			want[i] = "dynamodb:" + want[i]
		}
		got := statementActions(t, body, c.sid)
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("workman.yaml statement %s grants %v; %s's %s calls %v", c.sid, got, filepath.Base(filepath.Dir(c.file)), c.iface, want)
		}
	}
}

// dynamotableClient declares the DynamoDB calls, one interface each, that
// a backend's client interface embeds.
const dynamotableClient = "../pkg/dynamotable/client.go"

// interfaceMethods returns the method names of interface name in file,
// with those of the dynamotable interfaces it embeds.
func interfaceMethods(t *testing.T, file, name string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != name {
			return true
		}
		it, ok := ts.Type.(*ast.InterfaceType)
		if !ok {
			t.Fatalf("%s: %s is not an interface", file, name)
		}
		for _, m := range it.Methods.List {
			for _, n := range m.Names {
				out = append(out, n.Name)
			}
			if sel, ok := m.Type.(*ast.SelectorExpr); ok && len(m.Names) == 0 {
				if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "dynamotable" {
					t.Fatalf("%s: %s embeds %s.%s: only dynamotable's calls are read", file, name, sel.X, sel.Sel.Name)
				}
				out = append(out, interfaceMethods(t, dynamotableClient, sel.Sel.Name)...)
			}
		}
		return false
	})
	if len(out) == 0 {
		t.Fatalf("%s: no interface %s with methods", file, name)
	}
	return out
}

var actionList = regexp.MustCompile(`(?m)^\s*Action:\s*\[([^\]]*)\]`)

// statementActions returns the actions of the policy statement with Sid
// sid in a template (an inline [a, b] list).
func statementActions(t *testing.T, body, sid string) []string {
	t.Helper()
	i := strings.Index(body, "- Sid: "+sid+"\n")
	if i < 0 {
		t.Fatalf("no statement %s", sid)
	}
	rest := body[i+len("- Sid: "+sid+"\n"):]
	if j := strings.Index(rest, "- Sid: "); j >= 0 {
		rest = rest[:j]
	}
	m := actionList.FindStringSubmatch(rest)
	if m == nil {
		t.Fatalf("statement %s: no inline Action list", sid)
	}
	var out []string
	for _, a := range strings.Split(m[1], ",") {
		out = append(out, strings.TrimSpace(a))
	}
	return out
}
