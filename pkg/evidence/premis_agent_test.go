package evidence

import (
	"bytes"
	"strings"
	"testing"
)

// One Workman instance running two Mill versions is two PREMIS agents,
// each event linking the one with its version.
func TestPREMISAgentPerVersion(t *testing.T) {
	a, b := fixityEvent(1), fixityEvent(2)
	b.Agent.Version = "v1.3.0"
	if AgentID(a.Agent) == AgentID(b.Agent) {
		t.Fatalf("agents of two versions share the ID %s", AgentID(a.Agent))
	}
	var buf bytes.Buffer
	if err := EncodePREMIS(&buf, []*Event{a, b}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, v := range []string{"v1.2.3", "v1.3.0"} {
		id := "software:workman/i-0abc@" + v
		if n := strings.Count(out, "<agentIdentifierValue>"+id+"</agentIdentifierValue>"); n != 1 {
			t.Errorf("agent %s listed %d times, want once", id, n)
		}
		if !strings.Contains(out, "<agentVersion>"+v+"</agentVersion>") {
			t.Errorf("no agent of version %s", v)
		}
	}
}
