package auditlog

import (
	"sort"
	"strings"
	"testing"
	"time"
)

func TestKeysDoNotCollide(t *testing.T) {
	tuples := [][4]string{
		{"a", "s", "sp", "x/y"},
		{"a", "s", "sp/x", "y"},
		{"a", "s/sp", "x", "y"},
		{"a", "s", "sp", "x%2Fy"},
		{"a", "s", "sp", "x#y"},
		{"a", "s", "sp", "x%23y"},
		{"a", "s", "sp", ""},
		{"a", "s", "sp", "%"},
	}
	seen := map[string][4]string{}
	for _, tu := range tuples {
		k := ItemKey(tu[0], tu[1], tu[2], tu[3])
		if prev, dup := seen[k]; dup {
			t.Fatalf("%v and %v share key %q", prev, tu, k)
		}
		seen[k] = tu
		a, s, sp, c, err := ParseItemKey(k)
		if err != nil || [4]string{a, s, sp, c} != tu {
			t.Fatalf("ParseItemKey(%q) = %v %v %v %v %v, want %v", k, a, s, sp, c, err, tu)
		}
	}
	if _, _, _, _, err := ParseItemKey("a/b/c"); err == nil {
		t.Fatal("3-component key parsed")
	}
	if SpaceKey("a", "s", "sp/x") == SpaceKey("a", "s/sp", "x") {
		t.Fatal("space keys collide")
	}
}

func TestSortKeysOrderByTime(t *testing.T) {
	base := time.UnixMilli(999) // 3 digits: padding matters
	var keys []string
	for i, d := range []time.Duration{0, time.Millisecond, time.Second, 48 * time.Hour, 50 * 365 * 24 * time.Hour} {
		k, err := SortKey(base.Add(d), "ADD_CONTENT", EventHash("e", string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if !sort.StringsAreSorted(keys) {
		t.Fatalf("sort keys not in time order: %v", keys)
	}
	k, _ := SortKey(time.UnixMilli(1712345678901), "ADD_CONTENT", "9f86d081884c")
	if k != "001712345678901#ADD_CONTENT#9f86d081884c" {
		t.Fatalf("SortKey = %q", k)
	}
	g, _ := SpaceSortKey(time.UnixMilli(1712345678901), "a/b#c.jpg", "DELETE_CONTENT")
	if g != "001712345678901#a%2Fb%23c.jpg#DELETE_CONTENT" {
		t.Fatalf("SpaceSortKey = %q", g)
	}
	if _, err := SortKey(time.UnixMilli(-1), "X", "h"); err == nil {
		t.Fatal("time before 1970 accepted")
	}
}

func TestEventHash(t *testing.T) {
	h := EventHash("ab", "c")
	if len(h) != 12 || strings.Trim(h, "0123456789abcdef") != "" {
		t.Fatalf("EventHash = %q", h)
	}
	if h == EventHash("a", "bc") || h != EventHash("ab", "c") {
		t.Fatal("EventHash not length-prefixed or not deterministic")
	}
}

func FuzzItemKeyRoundTrip(f *testing.F) {
	f.Add("acct", "store", "space", "a/b#c%2F")
	f.Fuzz(func(t *testing.T, a, s, sp, c string) {
		k := ItemKey(a, s, sp, c)
		ga, gs, gsp, gc, err := ParseItemKey(k)
		if err != nil || ga != a || gs != s || gsp != sp || gc != c {
			t.Fatalf("round trip of %q %q %q %q via %q = %q %q %q %q %v", a, s, sp, c, k, ga, gs, gsp, gc, err)
		}
	})
}
