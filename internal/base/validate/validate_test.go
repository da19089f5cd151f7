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

func TestRequired(t *testing.T) {
	type port interface{ Do() }
	type cfg struct {
		Store   port   `validate:"required"`
		Name    string `validate:"required"`
		Hook    func() `validate:"required"`
		Comment string
	}
	p := validate.New("x: Config")
	p.Required(cfg{Name: "n"})
	want := "x: Config.Store is required\nx: Config.Hook is required"
	if err := p.Err(); err == nil || err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	p = validate.New("x: Config")
	p.Required(&cfg{Store: port(nil), Name: "n", Hook: func() {}})
	if err := p.Err(); err == nil || err.Error() != "x: Config.Store is required" {
		t.Fatalf("through a pointer: err = %v", err)
	}
}

func TestStruct(t *testing.T) {
	type cfg struct {
		Name    string `validate:"required"`
		Workers int
	}
	p := validate.Struct("x: Config", cfg{Workers: -1})
	p.Check(false, "Workers", -1, "not be negative")
	want := "x: Config.Name is required\nx: Config.Workers -1: must not be negative"
	if err := p.Err(); err == nil || err.Error() != want {
		t.Fatalf("err = %q, want %q", err, want)
	}
	if err := validate.Struct("x: Config", &cfg{Name: "n"}).Err(); err != nil {
		t.Fatalf("a complete config: %v", err)
	}
}
