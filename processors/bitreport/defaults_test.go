package bitreport_test

import (
	"testing"
	"time"

	"github.com/millfleet/mill/processors/bitreport"
)

// TestWithDefaultsZeroAndNegative: a zero field takes its default; a
// negative RecheckDelay or MaxRechecks is kept (validate refuses it), but a
// negative PageSize is unset too.
func TestWithDefaultsZeroAndNegative(t *testing.T) {
	c := bitreport.Config{}.WithDefaults()
	if c.RecheckDelay != bitreport.DefaultRecheckDelay || c.MaxRechecks != bitreport.DefaultMaxRechecks || c.PageSize != 1000 {
		t.Errorf("zero config: RecheckDelay %v, MaxRechecks %d, PageSize %d; want the defaults", c.RecheckDelay, c.MaxRechecks, c.PageSize)
	}
	if c.Prices == nil || c.Clock == nil || c.Logger == nil || c.Notifier == nil {
		t.Errorf("zero config: a computed default is missing: %+v", c)
	}
	c = bitreport.Config{RecheckDelay: -time.Second, MaxRechecks: -1, PageSize: -5}.WithDefaults()
	if c.RecheckDelay != -time.Second || c.MaxRechecks != -1 || c.PageSize != 1000 {
		t.Errorf("negative config: RecheckDelay %v, MaxRechecks %d, PageSize %d; want -1s, -1, 1000", c.RecheckDelay, c.MaxRechecks, c.PageSize)
	}
	c = bitreport.Config{RecheckDelay: time.Minute, MaxRechecks: 3, PageSize: 10}.WithDefaults()
	if c.RecheckDelay != time.Minute || c.MaxRechecks != 3 || c.PageSize != 10 {
		t.Errorf("set config changed: %v, %d, %d", c.RecheckDelay, c.MaxRechecks, c.PageSize)
	}
}
