package permanent_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/millfleet/mill/internal/base/permanent"
)

func TestNew(t *testing.T) {
	a, b := permanent.New("x: gone"), permanent.New("x: gone")
	wrapped := fmt.Errorf("open: %w", a)
	if !errors.Is(wrapped, a) || errors.Is(wrapped, b) || a.Error() != "x: gone" {
		t.Errorf("sentinels: Is(wrapped, a) = %v, Is(wrapped, b) = %v, text %q; want true, false, %q",
			errors.Is(wrapped, a), errors.Is(wrapped, b), a.Error(), "x: gone")
	}
	var p interface{ Permanent() bool }
	if !errors.As(wrapped, &p) || !p.Permanent() {
		t.Errorf("%v does not say it is permanent", wrapped)
	}
}
