package prometheusmetrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestLimitChanged: no limit series until a store is throttled; then the
// gauge holds its limit and the counter its changes by kind.
func TestLimitChanged(t *testing.T) {
	p := New(Options{NoProcessMetrics: true})
	if n, err := testutil.GatherAndCount(p.Registry(), "mill_store_request_limit"); err != nil || n != 0 {
		t.Fatalf("series before any throttling: %d, %v", n, err)
	}
	p.LimitChanged("s3 hot", "decrease", 85)
	p.LimitChanged("s3 hot", "increase", 86)
	p.LimitChanged("dynamodb audit", "decrease", 12)
	want := `
# HELP mill_store_request_limit The request rate a store's throttling has limited this worker to (requests/s; 0: unlimited), by store.
# TYPE mill_store_request_limit gauge
mill_store_request_limit{store="dynamodb audit"} 12
mill_store_request_limit{store="s3 hot"} 86
# HELP mill_store_request_limit_changes_total Changes of a store's request limit, by store and change (decrease, increase, reset).
# TYPE mill_store_request_limit_changes_total counter
mill_store_request_limit_changes_total{change="decrease",store="dynamodb audit"} 1
mill_store_request_limit_changes_total{change="decrease",store="s3 hot"} 1
mill_store_request_limit_changes_total{change="increase",store="s3 hot"} 1
`
	if err := testutil.GatherAndCompare(p.Registry(), strings.NewReader(want), "mill_store_request_limit", "mill_store_request_limit_changes_total"); err != nil {
		t.Error(err)
	}
}
