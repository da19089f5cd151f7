package fixity

import (
	"context"
	"log/slog"
)

// LogMessage is the message of the line Log writes; the CloudWatch metric
// filters of infra/producers.yaml match it (FixityOverdueCopies).
const LogMessage = "fixity coverage"

// Log writes a store's coverage (a roll-up of Totals) as one log line:
// account, store_id, spaces, copies, within, overdue, never_verified,
// not_covered, failed, read, at_rest and oldest_age_seconds.
func Log(ctx context.Context, l *slog.Logger, c Coverage) {
	l.LogAttrs(ctx, slog.LevelInfo, LogMessage,
		slog.String("account", c.Account), slog.String("store_id", c.StoreID),
		slog.Int64("spaces", c.Spaces), slog.Int64("copies", c.Copies), slog.Int64("within", c.Within),
		slog.Int64("overdue", c.Overdue), slog.Int64("never_verified", c.NeverVerified),
		slog.Int64("not_covered", c.NotCovered), slog.Int64("failed", c.Failed),
		slog.Int64("read", c.Read), slog.Int64("at_rest", c.AtRest),
		slog.Int64("oldest_age_seconds", int64(c.OldestAge().Seconds())))
}
