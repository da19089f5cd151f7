package bit

import (
	"fmt"
	"strings"
	"testing"
)

// obs builds Checksums from the table's notation: "NA" (C not read), "404"
// (not in storage; C and S), "-" (null), else a checksum value.
func obs(c, s, i, a string) Checksums {
	o := Checksums{Found: s != "404", ContentRead: c != "NA" && c != "404"}
	val := func(v string) string {
		if v == "-" || v == "NA" || v == "404" {
			return ""
		}
		return v
	}
	o.Content, o.Storage, o.Index, o.Audit = val(c), val(s), val(i), val(a)
	return o
}

func TestDecide(t *testing.T) {
	tests := []struct {
		c, s, i, a string
		want       int
		consensus  string
		why        string
	}{
		// The 11 rows of the bit-integrity table ("x" agrees, "y"/"z"/"w" disagree).
		{"x", "x", "x", "x", 1, "x", "row 1"},
		{"NA", "x", "x", "x", 1, "x", "row 1, content N/A"},
		{"y", "x", "x", "x", 2, "x", "row 2: content sour"},
		{"x", "y", "x", "x", 3, "x", "row 3: provider checksum wrong"},
		{"NA", "y", "x", "x", 4, "x", "row 4"},
		{"x", "x", "y", "x", 5, "x", "row 5: index wrong"},
		{"x", "x", "-", "x", 5, "x", "row 5: index null"},
		{"x", "x", "x", "y", 6, "x", "row 6"},
		{"NA", "x", "x", "y", 6, "x", "row 6, content N/A"},
		{"x", "x", "x", "-", 7, "x", "row 7"},
		{"NA", "x", "x", "-", 7, "x", "row 7, content N/A"},
		{"404", "404", "x", "x", 8, "x", "row 8"},
		{"x", "x", "-", "-", 9, "x", "row 9"},
		{"x", "x", "y", "y", 10, "x", "row 10 (S wins the 2-2 tie)"},
		{"404", "404", "-", "-", 11, "", "row 11"},

		// Ties and nulls beyond the table.
		{"y", "x", "-", "-", 2, "x", "C≠S alone: tie → S, content sour"},
		{"y", "x", "y", "x", 2, "x", "C≠S, I=C, A=S: 2-2 tie → S"},
		{"y", "x", "x", "-", 2, "x", "C≠S, I=S, A null: S majority"},
		{"y", "x", "-", "x", 2, "x", "C≠S, A=S, I null"},
		{"x", "y", "x", "-", 3, "x", "C≠S, I=C, A null: C majority"},
		{"x", "y", "-", "x", 3, "x", "C≠S, A=C, I null: C majority"},
		{"x", "y", "z", "w", 2, "y", "all four different: tie → S"},
		{"x", "y", "z", "z", 2, "z", "C≠S, I=A third value: consensus I, not C"},
		{"x", "y", "x", "z", 3, "x", "C≠S, I=C, A different: C majority"},
		{"x", "x", "y", "z", 10, "x", "C=S, I≠A both different"},
		{"x", "x", "y", "-", 10, "x", "C=S, I wrong, A null"},
		{"x", "x", "-", "y", 10, "x", "C=S, I null, A wrong"},
		{"NA", "x", "y", "-", 10, "x", "C N/A, S≠I, A null"},
		{"NA", "x", "y", "x", 5, "x", "C N/A, S≠I, A=S"},
		{"NA", "x", "y", "y", 4, "y", "C N/A, S≠I=A: row 4"},
		{"NA", "x", "y", "z", 10, "x", "C N/A, S, I, A all different"},
		{"NA", "x", "-", "-", 9, "x", "C N/A, only S"},
		{"NA", "-", "x", "x", 4, "x", "C N/A, provider gave no checksum"},
		{"NA", "-", "-", "-", 4, "", "nothing at all but the item exists"},
		{"x", "-", "x", "x", 1, "x", "provider gave no checksum: C stands for storage"},
		{"x", "-", "-", "-", 9, "x", "only C"},
		{"404", "404", "x", "-", 8, "x", "gone from storage, index only"},
		{"404", "404", "-", "x", 8, "x", "gone from storage, audit only"},
		{"404", "404", "x", "y", 8, "x", "gone from storage, I≠A: tie → I"},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("C=%s,S=%s,I=%s,A=%s", tt.c, tt.s, tt.i, tt.a)
		t.Run(name, func(t *testing.T) {
			o := obs(tt.c, tt.s, tt.i, tt.a)
			if got := Decide(o); got != tt.want {
				t.Errorf("Decide = case %d, want %d (%s)", got, tt.want, tt.why)
			}
			if got := o.Consensus(); got != tt.consensus {
				t.Errorf("Consensus = %q, want %q", got, tt.consensus)
			}
		})
	}
}

// TestDecideClaim: the MD5 Mill recorded with the copy (R) as the
// observation hands it to Decide. With the bytes read, a contradicted
// claim is S (the observation picks the storage-side value that
// contradicts the bytes), so a copy replaced with its claim kept is C ≠ S
// and the records decide between content replaced (case 2, repairable) and
// a stale claim over bytes the records follow (case 3). Not read, the
// provider's digest is S and a claim that differs from it is case 4.
func TestDecideClaim(t *testing.T) {
	tests := []struct {
		c, s, i, a, r string
		want          int
		consensus     string
		why           string
	}{
		{"x", "x", "x", "x", "x", 1, "x", "claim agrees"},
		{"x", "x", "x", "x", "-", 1, "x", "no claim (another tool wrote it)"},
		{"y", "x", "x", "x", "x", 2, "x", "replaced, claim kept (S is the claim), records old: case 2, not 10"},
		{"y", "x", "x", "-", "x", 2, "x", "replaced, claim kept, index only"},
		{"y", "x", "-", "-", "x", 2, "x", "replaced, claim kept, no records: the claim wins the tie"},
		{"y", "x", "y", "y", "x", 3, "y", "records follow the bytes: the recorded MD5 is wrong (case 3)"},
		{"y", "x", "y", "x", "x", 2, "x", "index follows the bytes, audit and claim do not"},
		{"y", "x", "x", "x", "y", 2, "x", "claim = bytes, provider digest and records agree on another: S, I, A outvote R, C"},
		{"y", "x", "y", "-", "y", 3, "y", "provider digest wrong, claim and index = bytes: R votes with C"},
		{"y", "z", "x", "x", "x", 2, "x", "three storage-side values: claim votes with the records"},
		{"y", "z", "y", "y", "x", 3, "y", "provider wrong, claim wrong, records follow the bytes"},
		{"NA", "y", "x", "x", "x", 4, "x", "not read: the provider's digest contradicts the claim and the records"},
		{"NA", "y", "x", "-", "x", 4, "x", "not read, digest vs claim and index: case 4 (before: case 10)"},
		{"NA", "y", "-", "-", "x", 4, "y", "not read, digest vs claim, no records: tie → S"},
		{"NA", "y", "y", "y", "x", 4, "y", "not read, the records follow the digest, the claim is stale"},
		{"NA", "x", "x", "x", "x", 1, "x", "not read, all agree"},
		{"404", "404", "x", "x", "x", 8, "x", "gone: the claim is of no copy"},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("C=%s,S=%s,I=%s,A=%s,R=%s", tt.c, tt.s, tt.i, tt.a, tt.r)
		t.Run(name, func(t *testing.T) {
			o := obs(tt.c, tt.s, tt.i, tt.a)
			if tt.r != "-" {
				o.Claim = tt.r
			}
			if got := Decide(o); got != tt.want {
				t.Errorf("Decide = case %d, want %d (%s)", got, tt.want, tt.why)
			}
			if got := o.Consensus(); got != tt.consensus {
				t.Errorf("Consensus = %q, want %q (%s)", got, tt.consensus, tt.why)
			}
		})
	}
}

// TestDecideTotal enumerates every combination over a small alphabet and
// checks that each has exactly one case in 1..11, and that the procedure is
// blind to the names of values (only equality matters).
func TestDecideTotal(t *testing.T) {
	cs := []string{"NA", "404", "-", "p", "q", "r", "s"}
	vs := []string{"-", "p", "q", "r", "s"}
	seen := map[int]bool{}
	n := 0
	for _, c := range cs {
		ss := vs
		if c == "404" {
			ss = []string{"404"}
		}
		for _, s := range ss {
			for _, i := range vs {
				for _, a := range vs {
					for _, r := range vs {
						o := obs(c, s, i, a)
						o.Claim = strings.TrimPrefix(r, "-")
						got := Decide(o)
						if got < 1 || got > 11 {
							t.Fatalf("C=%s S=%s I=%s A=%s R=%s: case %d", c, s, i, a, r, got)
						}
						ren := func(v string) string { // swap p and s
							switch v {
							case "p":
								return "s"
							case "s":
								return "p"
							}
							return v
						}
						o2 := obs(ren(c), ren(s), ren(i), ren(a))
						o2.Claim = strings.TrimPrefix(ren(r), "-")
						if again := Decide(o2); again != got {
							t.Fatalf("C=%s S=%s I=%s A=%s R=%s: case %d, renamed %d", c, s, i, a, r, got, again)
						}
						seen[got] = true
						n++
					}
				}
			}
		}
	}
	for k := 1; k <= 11; k++ {
		if !seen[k] {
			t.Errorf("case %d never reached", k)
		}
	}
	t.Logf("%d combinations", n)
}
