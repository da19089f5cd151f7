package stores

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestNameShapes: the cloud name checks accept exactly what the patterns
// with counted repetitions they replace accepted, on random names of every
// length around the bounds.
func TestNameShapes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		got      interface{ MatchString(string) bool }
		was      *regexp.Regexp
		alphabet string
	}{
		{"gcs bucket", gcsBucket, regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$`), "az09._-A/"},
		{"azure container", azureContainer, regexp.MustCompile(`^[a-z0-9](?:[a-z0-9]|-[a-z0-9]){2,62}$`), "az09-_A"},
		{"environment variable", envName, regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`), "aZ09_-"},
	} {
		r := rand.New(rand.NewPCG(1, 2))
		checked := 0
		for n := 0; n <= 260; n++ {
			for range 40 {
				var b strings.Builder
				for range n {
					// Mostly the first letters: long valid names are drawn too.
					i := r.IntN(len(tc.alphabet))
					if r.IntN(4) > 0 {
						i = r.IntN(2)
					}
					b.WriteByte(tc.alphabet[i])
				}
				v := b.String()
				if got, want := tc.got.MatchString(v), tc.was.MatchString(v); got != want {
					t.Fatalf("%s %q (%d bytes): accepted %v, the pattern %v", tc.name, v, n, got, want)
				}
				if tc.was.MatchString(v) {
					checked++
				}
			}
		}
		if checked < 100 {
			t.Errorf("%s: only %d valid names drawn", tc.name, checked)
		}
	}
}
