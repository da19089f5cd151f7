package bitreport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/task"
)

// CostKey is the key of a report's cost estimate: the report's key with
// ".cost.json" for ".tsv".
func CostKey(r task.BitReport, now time.Time) string {
	return strings.TrimSuffix(Key(r, now), ".tsv") + ".cost.json"
}

// putCost writes a run's cost estimate next to its report: the usage
// counted from the report's rows, priced per method with the table
// (pricing.Estimate: an estimate, labelled with the table and its date).
func (p *Processor) putCost(ctx context.Context, key string, cost pricing.Estimate) error {
	b, err := json.MarshalIndent(cost, "", "  ")
	if err != nil {
		return fmt.Errorf("bitreport: cost: %w", err)
	}
	b = append(b, '\n')
	if _, err := p.cfg.Reports.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("bitreport: cost: %w", err)
	}
	return nil
}
