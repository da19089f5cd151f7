package derive

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/evidence"
)

// checksumOfDetail returns the checksum a replication's or repair's
// detail names ("" when none).
func checksumOfDetail(d string) string {
	_, sum, ok := strings.Cut(d, "; checksum ")
	if !ok {
		return ""
	}
	return sum
}

// indexFacts compares the content index with the replications, repairs
// and deletions of the period: the row of each copy a write of the log
// was the latest write of (its Modified is the event's time) must hold
// what the write left — deleted after a deletion, live with the checksum
// written after a replication or repair. A row last changed before the
// event (or none) lost the write; a row changed after it is a later
// write's.
func indexFacts(ctx context.Context, idx contentindex.Index, logged map[string]*evidence.Event, r *CrossReport) error {
	ids := make([]string, 0, len(logged))
	for id, e := range logged {
		if e.Type != evidence.FixityCheck {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := logged[id]
		at, err := time.Parse(time.RFC3339Nano, e.Time)
		if err != nil {
			continue // Validate makes this unreachable
		}
		item := contentindex.Item{Account: e.Object.Account, StoreID: e.Object.Store, SpaceID: e.Object.Space, ContentID: e.Object.ContentID}
		where := "content-index row " + item.String()
		row, err := idx.Get(ctx, item)
		if errors.Is(err, contentindex.ErrNotFound) {
			r.Problems = append(r.Problems, evidence.Problem{Where: where, What: fmt.Sprintf("missing, while the log holds the %s of it at %s (event %s)", e.Type, e.Time, id)})
			continue
		}
		if err != nil {
			return err
		}
		mod := row.Modified.UTC().Truncate(time.Millisecond)
		switch {
		case mod.After(at):
			continue // a later write's
		case mod.Before(at):
			r.Problems = append(r.Problems, evidence.Problem{Where: where, What: fmt.Sprintf("last changed at %s, before the %s at %s the log holds (event %s): the index lost that write, or was changed", evidence.FormatTime(mod), e.Type, e.Time, id)})
		case e.Type == evidence.Deletion && !row.Deleted:
			r.Problems = append(r.Problems, evidence.Problem{Where: where, What: fmt.Sprintf("live, while the log holds its deletion at %s (event %s)", e.Time, id)})
		case e.Type != evidence.Deletion && row.Deleted:
			r.Problems = append(r.Problems, evidence.Problem{Where: where, What: fmt.Sprintf("deleted, while the log holds the %s at %s that left it live (event %s)", e.Type, e.Time, id)})
		case e.Type != evidence.Deletion:
			if want := checksumOfDetail(e.Detail); want != "" && !strings.EqualFold(row.Checksum, want) {
				r.Problems = append(r.Problems, evidence.Problem{Where: where, What: fmt.Sprintf("checksum %q, while the %s at %s the log holds (event %s) wrote %s", row.Checksum, e.Type, e.Time, id, want)})
			}
		}
	}
	return nil
}
