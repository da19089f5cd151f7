package defaults_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
)

type inner struct {
	Attempts int
	Base     time.Duration
}

type config struct {
	Name    string
	Workers int
	Rate    float64
	Delay   time.Duration
	Retry   inner     // all fields exported: filled field by field
	Since   time.Time // unexported fields: one value
	Hook    func() int
	hidden  int
}

var d = config{Name: "mill", Workers: 4, Rate: 0.5, Delay: time.Second,
	Retry: inner{Attempts: 3, Base: time.Minute}, Since: time.Unix(100, 0), Hook: func() int { return 1 }, hidden: 9}

func TestFill(t *testing.T) {
	var c config
	defaults.Fill(&c, d)
	if c.Name != "mill" || c.Workers != 4 || c.Rate != 0.5 || c.Delay != time.Second || c.Retry != d.Retry ||
		!c.Since.Equal(d.Since) || c.Hook == nil || c.Hook() != 1 {
		t.Errorf("Fill of the zero config = %+v, want every field of the defaults", c)
	}
	if c.hidden != 0 {
		t.Errorf("Fill set an unexported field to %d", c.hidden)
	}

	c = config{Name: "own", Workers: -1, Rate: -2, Delay: -time.Second, Retry: inner{Attempts: 7}, Since: time.Unix(5, 0)}
	defaults.Fill(&c, d)
	if c.Name != "own" || c.Workers != -1 || c.Rate != -2 || c.Delay != -time.Second || !c.Since.Equal(time.Unix(5, 0)) {
		t.Errorf("Fill of a set config = %+v, want its set fields kept", c)
	}
	if c.Retry != (inner{Attempts: 7, Base: time.Minute}) {
		t.Errorf("Fill of a half-set nested struct = %+v, want its zero field filled on its own", c.Retry)
	}
}

func TestFillNonPositive(t *testing.T) {
	c := config{Name: "own", Workers: -1, Rate: -2, Delay: -time.Second, Retry: inner{Attempts: -3, Base: 2 * time.Minute}}
	defaults.FillNonPositive(&c, d)
	if c.Name != "own" || c.Workers != 4 || c.Rate != 0.5 || c.Delay != time.Second ||
		c.Retry != (inner{Attempts: 3, Base: 2 * time.Minute}) || !c.Since.Equal(d.Since) {
		t.Errorf("FillNonPositive = %+v, want negative and zero fields set from the defaults, the rest kept", c)
	}
	pos := config{Workers: 2, Rate: 0.1, Delay: time.Millisecond}
	defaults.FillNonPositive(&pos, d)
	if pos.Workers != 2 || pos.Rate != 0.1 || pos.Delay != time.Millisecond {
		t.Errorf("FillNonPositive changed positive fields: %+v", pos)
	}
}

func TestFillZeroDefaultsKeepValues(t *testing.T) {
	c := config{Workers: -5}
	defaults.FillNonPositive(&c, config{})
	if c.Workers != -5 {
		t.Errorf("a field without a default changed: %d", c.Workers)
	}
}
