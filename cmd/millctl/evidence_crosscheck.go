package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/evidence/derive"
)

// evidenceCrossFlags are the flag group of a log that may be cross-checked
// with Mill's records (verify --cross-check): the log, the period and the
// records.
type evidenceCrossFlags struct {
	evidenceLogFlags
	cross        bool
	since, until string
	records      evidenceSourceFlags
}

func (f *evidenceCrossFlags) defineGroup(fs *flag.FlagSet, a *app) {
	f.evidenceLogFlags.defineGroup(fs, a)
	fs.BoolVar(&f.cross, "cross-check", false, "also compare Mill's records of the period (the bit log, the audit log) with the log's events")
	fs.StringVar(&f.since, "since", "", "cross-check the records from this RFC 3339 `time` (default: the beginning)")
	fs.StringVar(&f.until, "until", "", "cross-check the records before this RFC 3339 `time` (default and at most: where the appender got)")
	f.records.defineGroup(fs, a)
}

// checkRecords cross-checks the records of the period with the events of
// the log (b, v) and returns the mismatches.
func (f *evidenceCrossFlags) checkRecords(ctx context.Context, a *app, b blob.Store, v note.Verifier) ([]evidence.Problem, error) {
	var since, until time.Time
	var err error
	if f.since != "" {
		if since, err = time.Parse(time.RFC3339Nano, f.since); err != nil {
			return nil, usagef("--since %q: want an RFC 3339 time", f.since)
		}
	}
	cur, ok, err := derive.LoadCursor(ctx, b)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("cross-check: the log has no appender cursor: nothing was appended by millctl evidence append")
	}
	until = cur.Done
	if f.until != "" {
		u, err := time.Parse(time.RFC3339Nano, f.until)
		if err != nil {
			return nil, usagef("--until %q: want an RFC 3339 time", f.until)
		}
		if u.Before(until) {
			until = u
		} else if u.After(until) {
			fmt.Fprintf(a.stderr, "cross-check: --until %s is past where the appender got; checking to %s\n", f.until, until.Format(time.RFC3339Nano))
		}
	}
	src, db, err := f.records.open(ctx, a)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	logged := map[string]*evidence.Event{}
	if _, err := evidence.Events(ctx, b, v, func(_ int64, e *evidence.Event) error {
		t, err := time.Parse(time.RFC3339Nano, e.Time)
		if err == nil && !t.Before(since) && t.Before(until) {
			logged[e.ID] = e
		}
		return nil
	}); err != nil {
		// A log that does not verify cannot be read to the end: verify
		// names why; the cross-check says it could not run.
		return []evidence.Problem{{Where: "cross-check", What: "the log's events cannot be read: " + err.Error()}}, nil
	}
	r, err := derive.CrossCheck(ctx, src, evidenceUsers, logged, since, until, 1000)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(a.stdout, "cross-check %s to %s: %d records, %d events of the period; %d match, %d superseded by a later check\n",
		since.Format(time.RFC3339Nano), until.Format(time.RFC3339Nano), r.Records, len(logged), r.Matched, r.Superseded)
	return r.Problems, nil
}
