package infra

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/fixity"
)

// TestFixityMetricFiltersMatchTheLogLine keeps producers.yaml's
// FixityOverdueCopies metric filters in step with the line the bitproducer
// logs (fixity.Log): the pattern's message, and every $.field the filters
// read is a field of that line (the value a number).
func TestFixityMetricFiltersMatchTheLogLine(t *testing.T) {
	body := readTemplate(t, "producers.yaml")
	var buf bytes.Buffer
	fixity.Log(context.Background(), slog.New(slog.NewJSONHandler(&buf, nil)), fixity.Coverage{Account: "acme", StoreID: "1", Copies: 5, Overdue: 3})
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"FixityOverdueMetricFilter", "FixityOverdueTotalMetricFilter"} {
		i := strings.Index(body, "\n  "+name+":\n")
		if i < 0 {
			t.Fatalf("producers.yaml has no %s", name)
		}
		block := body[i+1:]
		if j := regexp.MustCompile(`\n\n  [A-Za-z]`).FindStringIndex(block); j != nil {
			block = block[:j[0]]
		}
		if want := `'{ $.msg = "` + fixity.LogMessage + `" }'`; !strings.Contains(block, "FilterPattern: "+want) {
			t.Errorf("%s: the filter pattern is not %s:\n%s", name, want, block)
		}
		fields := regexp.MustCompile(`\$\.([a-z_]+)`).FindAllStringSubmatch(block, -1)
		if len(fields) < 2 {
			t.Fatalf("%s reads no field:\n%s", name, block)
		}
		for _, f := range fields {
			if _, ok := line[f[1]]; !ok {
				t.Errorf("%s reads $.%s, which the log line lacks: %s", name, f[1], buf.String())
			}
		}
		if !strings.Contains(block, "MetricValue: $.overdue") || line["overdue"] != 3.0 {
			t.Errorf("%s: the metric is not the line's overdue count (%v)", name, line["overdue"])
		}
	}
}
