package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestPropsSetChangesTheMimetype: content-mimetype is the item's mimetype
// (DuraCloud's name), not a user property: `content props set …
// content-mimetype=X` changes it — through an audited rewrite of the
// item's verified bytes, its user properties kept — and stores no
// property of that name. Other system properties are refused.
func TestPropsSetChangesTheMimetype(t *testing.T) {
	q := withMemAuditQueue(t)
	dir := t.TempDir()
	pcsWrite(t, dir, "accounts.json", fmt.Sprintf(`{"accounts": [{"id": "demo", "stores": [
  {"id": "1", "primary": true, "kind": "fs", "root": %q}]}]}`, filepath.Join(dir, "store1")))
	env := map[string]string{"MILL_CONFIG_DIR": dir, "MILL_USER_ID": "carol"}
	file := pcsWrite(t, dir, "hello.txt", "hello")
	if code, _, errOut := pcsRun(t, env, "", "content", "put", "--create-space", "--mimetype", "text/plain", "--prop", "owner=carol",
		"demo", "1", "docs", "hello", file); code != 0 {
		t.Fatalf("put: %s", errOut)
	}
	before := len(auditTasks(t, q))

	code, out, errOut := pcsRun(t, env, "", "content", "props", "set", "demo", "1", "docs", "hello", "content-mimetype=text/markdown", "tag=x")
	if code != 0 {
		t.Fatalf("props set: %d %s", code, errOut)
	}
	if !strings.Contains(out, `"mimetype": "text/markdown"`) || strings.Contains(out, `"content-mimetype"`) ||
		!strings.Contains(out, `"owner": "carol"`) || !strings.Contains(out, `"tag": "x"`) {
		t.Fatalf("props set printed:\n%s", out)
	}
	if code, out, _ := pcsRun(t, env, "", "content", "get", "demo", "1", "docs", "hello"); code != 0 || out != "hello" {
		t.Fatalf("content after the change: %q", out)
	}
	tasks := auditTasks(t, q)[before:]
	if len(tasks) != 1 || tasks[0].Get("content-mimetype") != "text/markdown" ||
		tasks[0].Get("content-checksum") != "5d41402abc4b2a76b9719d911017c592" || tasks[0].Get("content-properties") != `{"owner":"carol","tag":"x"}` {
		t.Fatalf("audited %v", tasks)
	}

	// The same mimetype again: a property change only.
	if code, _, errOut := pcsRun(t, env, "", "content", "props", "set", "demo", "1", "docs", "hello", "content-mimetype=text/markdown", "tag=y"); code != 0 {
		t.Fatal(errOut)
	}
	if tasks := auditTasks(t, q)[before+1:]; len(tasks) != 1 || tasks[0].Get("action") != "SET_CONTENT_PROPERTIES" {
		t.Fatalf("audited %v", tasks)
	}

	for _, bad := range [][]string{
		{"content-size=1"}, {"Content-MD5=abc"}, {"content-mimetype="}, {"content-mimetype=not a type"},
		{"content-mimetype=text/plain\u0007"}, {"--delete", "content-mimetype", "tag=z"},
	} {
		args := append([]string{"content", "props", "set", "demo", "1", "docs", "hello"}, bad...)
		if bad[0] == "--delete" {
			args = append([]string{"content", "props", "set", bad[0], bad[1], "demo", "1", "docs", "hello"}, bad[2:]...)
		}
		if code, _, errOut := pcsRun(t, env, "", args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d %s, want a usage error", bad, code, errOut)
		}
	}
	if n := len(auditTasks(t, q)); n != before+2 {
		t.Errorf("refused changes audited: %d tasks", n-before-2)
	}
}
