package infra

import (
	"regexp"
	"testing"
)

// TestImportsExist: every core export another template imports
// (Fn::ImportValue "${CoreStackName}-NAME") is one core.yaml exports, so a
// renamed output cannot break a stack only at deploy time.
func TestImportsExist(t *testing.T) {
	core := readTemplate(t, "core.yaml")
	exports := map[string]bool{}
	for _, m := range regexp.MustCompile(`Export: \{ Name: !Sub "\$\{AWS::StackName\}-([A-Za-z0-9]+)" \}`).FindAllStringSubmatch(core, -1) {
		exports[m[1]] = true
	}
	if len(exports) < 20 {
		t.Fatalf("found %d exports in core.yaml; the pattern no longer matches it", len(exports))
	}
	imp := regexp.MustCompile(`"Fn::ImportValue": !Sub "\$\{CoreStackName\}-([A-Za-z0-9]+)"`)
	for _, name := range []string{"alarms.yaml", "workman.yaml", "producers.yaml", "console.yaml"} {
		body := readTemplate(t, name)
		n := 0
		for _, m := range imp.FindAllStringSubmatch(body, -1) {
			n++
			if !exports[m[1]] {
				t.Errorf("%s imports %s-%s, which core.yaml does not export", name, "${CoreStackName}", m[1])
			}
		}
		if name == "console.yaml" && n < 10 {
			t.Errorf("console.yaml: %d imports found, want the buckets and the seven queues", n)
		}
	}
}
