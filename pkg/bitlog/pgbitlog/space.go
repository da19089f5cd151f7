package pgbitlog

import "github.com/millfleet/mill/pkg/bitlog"

// sqlSpaceResults[after] reads a page of the rows of one space in one
// producer run (the bit report's listing):
// equality on the leading columns of bit_log_by_month_item_per_run, a
// range on content_id and its order, so each page reads about a page of
// the index in the run's partition, whatever the space's size. The
// general statement (sqlBitResults) cannot use the index so: its filters
// are optional and its keyset compares the key byte-wise, so every page
// scanned and sorted the run's partition (a space of 100,000 items took
// 100 such pages of 100,000 rows). $1..$4 the run, account, store and
// space, $5 the run's month, $6 the result (empty: all), $7 the limit, $8 the
// last content ID of the previous page (with after).
var sqlSpaceResults = [2]string{spaceHead + spaceTail, spaceHead + ` AND content_id > $8` + spaceTail}

const spaceHead = sqlBitColumns + `
WHERE run_id = $1 AND account = $2 AND store_id = $3 AND space_id = $4 AND run_month = $5
  AND ($6 = '' OR result = $6)`

const spaceTail = `
ORDER BY content_id
LIMIT $7`

// spaceResults returns the index in sqlSpaceResults of the statement of
// Results for a filter of one space of one producer run, and its
// arguments; ok is false for any other filter, and for a page token from
// another listing, which the general statement answers as before.
func spaceResults(f bitlog.Filter, after bitlog.PageKey, hasAfter bool, limit int) (i int, args []any, ok bool) {
	m, inRun := bitlog.RunMonth(f.RunID)
	if !inRun || f.Account == "" || f.StoreID == "" || f.SpaceID == "" || f.ContentID != "" {
		return 0, nil, false
	}
	if hasAfter && (after.RunID != f.RunID || after.Account != f.Account || after.StoreID != f.StoreID || after.SpaceID != f.SpaceID) {
		return 0, nil, false
	}
	args = []any{f.RunID, f.Account, f.StoreID, f.SpaceID, m, string(f.Result), limit + 1}
	if !hasAfter {
		return 0, args, true
	}
	return 1, append(args, after.ContentID), true
}
