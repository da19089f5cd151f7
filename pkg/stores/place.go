package stores

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

// MaxPlaceLen is the longest region, provider or threatZone a store may
// name, in bytes.
const MaxPlaceLen = 64

// placeKeys are the store fields that say where a store's copies are and
// who keeps them ("region", "provider", "threatZone"): what an auditor
// judges the geographic and media diversity of the copies by (pkg/ndsa).
var placeKeys = map[string]bool{"region": true, "provider": true, "threatZone": true}

// placeProblem says what is wrong with a region, provider or threatZone
// value ("" when nothing is). A value is a label: 1 to MaxPlaceLen ASCII
// letters, digits, '.', '-' and '_', starting with a letter or digit.
// An empty region is the AWS SDK's default (as before these fields were
// labels); an empty provider or threatZone is refused: leave the key out.
func placeProblem(key, v string) string {
	if v == "" {
		if key == "region" {
			return ""
		}
		return fmt.Sprintf("%s must not be empty (leave the key out when unknown)", key)
	}
	if len(v) > MaxPlaceLen {
		return fmt.Sprintf("%s is %d bytes long, more than %d", key, len(v), MaxPlaceLen)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		letterOrDigit := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if letterOrDigit || i > 0 && (c == '.' || c == '-' || c == '_') {
			continue
		}
		r, _ := utf8.DecodeRuneInString(v[i:])
		return fmt.Sprintf("%s %q: character %q at byte %d is not allowed (want ASCII letters, digits, '.', '-' and '_', starting with a letter or digit)", key, v, r, i)
	}
	return ""
}

// parsePlace reads the value of a region, provider or threatZone key and
// stores it in *dst; a problem is reported at the value's position.
func parsePlace(w *jsonpos.Walker, key string, dst *string) ([]problemAt, error) {
	v, voff, err := w.String(key)
	if err != nil {
		if pe, ok := errors.AsType[*jsonpos.Error](err); ok {
			return []problemAt{{voff, pe.Msg}}, nil
		}
		return nil, err
	}
	*dst = v
	if p := placeProblem(key, v); p != "" {
		return []problemAt{{voff, p}}, nil
	}
	return nil, nil
}
