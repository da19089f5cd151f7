package infra

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBitProducerGrantsWhatS3BatchCalls keeps producers.yaml's at-rest
// grants equal to what pkg/atrest/s3batch calls: its S3 calls (manifests
// and completion reports, under the at-rest prefix of the reports bucket)
// and its S3 Control calls (the jobs). A missing grant is AccessDenied on
// AWS only, never against the emulator and the stand-in.
func TestBitProducerGrantsWhatS3BatchCalls(t *testing.T) {
	body := readTemplate(t, "producers.yaml")
	s3Calls, ctlCalls := s3batchCalls(t)
	// The IAM action of each call: HeadObject is allowed by s3:GetObject.
	action := map[string]string{"HeadObject": "GetObject"}
	want := func(calls []string) []string {
		var out []string
		for _, c := range calls {
			if a, ok := action[c]; ok {
				c = a
			}
			if a := "s3:" + c; !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
		slices.Sort(out)
		return out
	}
	got := statementActions(t, body, "AtRestReports")
	slices.Sort(got)
	if w := want(s3Calls); !slices.Equal(got, w) {
		t.Errorf("producers.yaml AtRestReports grants %v; s3batch calls %v", got, w)
	}
	got = append(statementActions(t, body, "AtRestCreateJob"), statementActions(t, body, "AtRestDescribeJob")...)
	slices.Sort(got)
	if w := want(ctlCalls); !slices.Equal(got, w) {
		t.Errorf("producers.yaml grants %v on jobs; s3batch calls %v", got, w)
	}
	if got := statementActions(t, body, "AtRestPassRole"); !slices.Equal(got, []string{"iam:PassRole"}) {
		t.Errorf("AtRestPassRole grants %v", got)
	}
	// The Batch Operations role: trusted by Batch Operations only, reads
	// the stores' objects, reads the manifests and writes the reports.
	role := body[strings.Index(body, "\n  BatchOperationsRole:\n"):]
	role = role[:strings.Index(role[1:], "\n  # ")+1]
	if !strings.Contains(role, "Principal: { Service: batchoperations.s3.amazonaws.com }") || strings.Count(role, "Principal:") != 1 {
		t.Error("BatchOperationsRole is not trusted by batchoperations.s3.amazonaws.com alone")
	}
	for sid, w := range map[string][]string{
		"StoreObjects":        {"s3:GetObject", "s3:GetObjectVersion"},
		"ManifestsAndReports": {"s3:GetObject", "s3:GetObjectVersion", "s3:PutObject"},
		"ReportsBucket":       {"s3:GetBucketLocation"},
	} {
		if got := statementActions(t, role, sid); !slices.Equal(got, w) {
			t.Errorf("BatchOperationsRole %s grants %v, want %v", sid, got, w)
		}
	}
	if !strings.Contains(body, "\n  BatchOperationsRoleArn:\n") {
		t.Error("producers.yaml does not output BatchOperationsRoleArn")
	}
}

// s3batchCalls returns the S3 and S3 Control operations s3batch calls
// (c.s3.X and c.ctl.X).
func s3batchCalls(t *testing.T) (s3Calls, ctlCalls []string) {
	t.Helper()
	dir := "../pkg/atrest/s3batch"
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			inner, ok := sel.X.(*ast.SelectorExpr)
			if !ok || (inner.Sel.Name != "s3" && inner.Sel.Name != "ctl") {
				return true
			}
			key := inner.Sel.Name + "." + sel.Sel.Name
			if seen[key] {
				return true
			}
			seen[key] = true
			if inner.Sel.Name == "s3" {
				s3Calls = append(s3Calls, sel.Sel.Name)
			} else {
				ctlCalls = append(ctlCalls, sel.Sel.Name)
			}
			return true
		})
	}
	if len(s3Calls) == 0 || len(ctlCalls) == 0 {
		t.Fatalf("found no S3 (%v) or S3 Control (%v) calls in s3batch", s3Calls, ctlCalls)
	}
	return s3Calls, ctlCalls
}
