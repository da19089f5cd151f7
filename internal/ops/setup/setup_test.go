package setup

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// fake is a Resource that records calls.
type fake struct {
	name    string
	plan    Change
	planErr error
	applied *[]string
	fail    error
}

func (f *fake) Kind() string { return "fake" }
func (f *fake) Name() string { return f.name }
func (f *fake) Plan(context.Context) (Change, error) {
	return f.plan, f.planErr
}
func (f *fake) Apply(_ context.Context, c Change) (Result, error) {
	*f.applied = append(*f.applied, f.name)
	if f.fail != nil {
		return Result{}, f.fail
	}
	st := StatusUpdated
	if c.Action == ActionCreate {
		st = StatusCreated
	}
	return Result{Status: st, Details: c.Reasons}, nil
}

func TestPlanAndApply(t *testing.T) {
	var applied []string
	rs := []Resource{
		&fake{name: "new", plan: Change{Action: ActionCreate, Reasons: []string{"brand new"}}, applied: &applied},
		&fake{name: "same", plan: Change{Action: ActionNone, Notes: []string{"versioning: not implemented"}}, applied: &applied},
		&fake{name: "drifted", plan: Change{Action: ActionUpdate, Reasons: []string{"x 1 → 2"}}, applied: &applied},
		&fake{name: "broken", planErr: errors.New("access denied"), applied: &applied},
		&fake{name: "refused", plan: Change{Action: ActionCreate}, fail: errors.New("quota"), applied: &applied},
		&fake{name: "after", plan: Change{Action: ActionCreate}, applied: &applied},
	}
	var reported []string
	sum, err := Plan(context.Background(), rs, func(r Result) { reported = append(reported, r.String()) })
	if len(applied) != 0 {
		t.Fatalf("Plan applied %v", applied)
	}
	if err == nil || !strings.Contains(err.Error(), "fake broken: access denied") {
		t.Fatalf("Plan error = %v", err)
	}
	if sum.Created != 3 || sum.Updated != 1 || sum.Existed != 1 || sum.Failed != 1 || len(reported) != 6 {
		t.Fatalf("plan summary %+v, reported %d", sum, len(reported))
	}
	if got := sum.String(); got != "setup (dry run): 3 to create, 1 to update, 1 already exist, 1 failed — nothing was changed" {
		t.Fatalf("plan summary line %q", got)
	}
	if !strings.Contains(reported[1], "exists") || !strings.Contains(reported[1], "\n  note: versioning: not implemented") {
		t.Fatalf("note not reported: %q", reported[1])
	}

	sum, err = Apply(context.Background(), rs, nil)
	if want := []string{"new", "drifted", "refused", "after"}; strings.Join(applied, ",") != strings.Join(want, ",") {
		t.Fatalf("applied %v, want %v (failures do not stop the rest; unchanged ones are not applied)", applied, want)
	}
	if err == nil || !strings.Contains(err.Error(), "quota") || !strings.Contains(err.Error(), "access denied") {
		t.Fatalf("Apply error = %v", err)
	}
	if got := sum.String(); got != "setup: 2 created, 1 updated, 1 already existed, 2 failed" {
		t.Fatalf("apply summary line %q", got)
	}
	if r := sum.Results[4]; r.Status != StatusFailed || !strings.Contains(r.String(), "failed: quota") {
		t.Fatalf("failed result %q", r.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	applied = nil
	if _, err := Apply(ctx, rs, nil); !errors.Is(err, context.Canceled) || len(applied) != 0 {
		t.Fatalf("cancelled Apply: %v, applied %v", err, applied)
	}
}

func TestSummaryNothingToDo(t *testing.T) {
	s := Summary{Existed: 13}
	if got := s.String(); got != "setup: 0 created, 13 already existed — nothing to do" {
		t.Fatal(got)
	}
}

func TestParseRedrivePolicy(t *testing.T) {
	for _, s := range []string{`{"deadLetterTargetArn":"arn:x","maxReceiveCount":10}`, `{"deadLetterTargetArn":"arn:x","maxReceiveCount":"10"}`} {
		rp, err := ParseRedrivePolicy(s)
		if err != nil || rp.DeadLetterTargetArn != "arn:x" || rp.MaxReceiveCount != 10 {
			t.Fatalf("%s → %+v %v", s, rp, err)
		}
	}
	for _, s := range []string{`{`, `{"deadLetterTargetArn":"arn:x","maxReceiveCount":"ten"}`} {
		if _, err := ParseRedrivePolicy(s); err == nil {
			t.Fatalf("%s parsed", s)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{DatabaseURL: "postgres://x"}).WithDefaults().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := Config{
		VisibilityTimeout: 1500 * time.Millisecond, WorkRetention: 10 * 24 * time.Hour, DeadLetterRetention: 5 * 24 * time.Hour,
		MaxReceiveCount: -1, ConfigBucket: "x", StateBucket: "same", ReportsBucket: "same", AuditTable: "t", LeaseTable: "t", FleetTable: "t",
	}.WithDefaults()
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad config accepted")
	}
	for _, want := range []string{"visibility timeout", "shorter than work queue retention", "max receive count", "config bucket \"x\"",
		"state and reports bucket are both", "audit and lease table are both", "lease and fleet table are both", "no database URL"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if _, err := Resources(Config{SkipDB: true}, Clients{}); err == nil {
		t.Fatal("Resources without clients accepted")
	}
}
