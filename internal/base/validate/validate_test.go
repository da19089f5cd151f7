package validate_test

import (
	"errors"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/base/validate"
)

func TestProblems(t *testing.T) {
	p := validate.New("x: Config")
	p.Require("Store", true)
	p.Require("Queue", false)
	p.Check(true, "Workers", 4, "be at least 1")
	p.Check(false, "Delay", -time.Second, "be within 0..%s", 15*time.Minute)
	inner := errors.New("unknown format")
	p.Add("Format", inner)
	p.Add("Other", nil)
	err := p.Err()
	want := "x: Config.Queue is required\nx: Config.Delay -1s: must be within 0..15m0s\nx: Config.Format: unknown format"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	if !errors.Is(err, inner) {
		t.Error("a nested problem is not wrapped")
	}
	if err := validate.New("y: Config").Err(); err != nil {
		t.Fatalf("no problems: %v", err)
	}
}
