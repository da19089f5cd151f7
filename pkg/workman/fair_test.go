package workman

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

func tenantJobs(tenants string) []*job {
	var out []*job
	for _, r := range tenants {
		out = append(out, &job{tenant: string(r)})
	}
	return out
}

func tenantsOf(js []*job) string {
	var b strings.Builder
	for _, j := range js {
		b.WriteString(j.tenant)
	}
	return b.String()
}

// TestPlannerRoundRobinAcrossAccounts: a batch mostly of account A with two
// messages of B is dispatched alternately, and a freed worker goes to the
// account with the fewest tasks running.
func TestPlannerRoundRobinAcrossAccounts(t *testing.T) {
	p := newPlanner(Config{Workers: 4}.WithDefaults(), []float64{0})
	p.ask(0)
	grants, _, _ := p.decide()
	if len(grants) != 1 {
		t.Fatalf("grants %v", grants)
	}
	p.received(grants[0], tenantJobs("AAAAAAAABB"))
	_, starts, _ := p.decide()
	if got := tenantsOf(starts); got != "ABAB" {
		t.Fatalf("first four starts %q, want ABAB (FIFO would be AAAA)", got)
	}
	p.finished(starts[1]) // a B finishes: A has 2 running, B 1, no B held
	_, more, _ := p.decide()
	if got := tenantsOf(more); got != "A" {
		t.Fatalf("next start %q, want A", got)
	}
	if p.tenants["A"] != 3 || p.tenants["B"] != 1 {
		t.Fatalf("running by tenant %v", p.tenants)
	}
}

// TestPlannerRoundRobinKeepsPriority: a higher queue's held message still
// starts before a lower queue's, whatever their accounts.
func TestPlannerRoundRobinKeepsPriority(t *testing.T) {
	p := newPlanner(Config{Workers: 1}.WithDefaults(), []float64{0, 0})
	p.tenants["A"] = 5 // A is busy elsewhere
	p.qs[0].held = []heldJob{{j: &job{tenant: "A"}}}
	p.qs[1].held = []heldJob{{j: &job{tenant: "B"}}}
	p.held = 2
	p.qs[0].ans, p.qs[1].ans = quiet, quiet
	_, starts, _ := p.decide()
	if got := tenantsOf(starts); got != "A" {
		t.Fatalf("start %q, want the higher queue's A", got)
	}
}

func TestTenantOf(t *testing.T) {
	body, err := task.Encode(task.New(task.TypeDup, map[string]string{task.KeyAccount: "acme"}), task.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		m    queue.Message
		want string
	}{
		{queue.Message{Group: "g", Body: body}, "g"},
		{queue.Message{Body: body}, "acme"},
		{queue.Message{Body: []byte("not a task")}, ""},
	} {
		if got := tenantOf(&c.m); got != c.want {
			t.Errorf("tenantOf(%+v) = %q, want %q", c.m, got, c.want)
		}
	}
}
