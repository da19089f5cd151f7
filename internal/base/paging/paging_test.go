package paging

import "testing"

func TestSize(t *testing.T) {
	for _, c := range []struct{ limit, want int }{{-1, 100}, {0, 100}, {1, 1}, {999, 999}, {1000, 1000}, {1001, 1000}} {
		if got := Size(c.limit, 100, 1000); got != c.want {
			t.Errorf("Size(%d, 100, 1000) = %d, want %d", c.limit, got, c.want)
		}
	}
}

func TestItems(t *testing.T) {
	for _, c := range []struct{ limit, want int }{{0, DefaultItems}, {1, 1}, {MaxItems, MaxItems}, {MaxItems + 1, MaxItems}} {
		if got := Items(c.limit); got != c.want {
			t.Errorf("Items(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}
