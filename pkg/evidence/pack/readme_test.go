package pack

import (
	"testing"

	"github.com/millfleet/mill/pkg/ndsa"
)

// The matrix writes each verdict as ndsa spells it, NOT MET in capitals,
// and anything that is no verdict as not evidenced (never as its own text).
func TestMatrixSymbols(t *testing.T) {
	for v, want := range map[ndsa.Verdict]string{
		ndsa.Met: "met", ndsa.Partial: "partial", ndsa.NotMet: "NOT MET", ndsa.NotEvidenced: "not evidenced",
		"<b>met</b>": "not evidenced", "": "not evidenced",
	} {
		if got := symbol(v); got != want {
			t.Errorf("symbol(%q) = %q, want %q", v, got, want)
		}
	}
}
