package derive

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/evidence"
)

// CheckSources are the records the cross-check reads: Sources, the bit
// log's rows by key (to tell a row replaced by a later check from one
// deleted), and the content index (nil: not compared).
type CheckSources struct {
	Sources
	Rows  bitlog.Log
	Index contentindex.Index
}

// CrossReport is what CrossCheck found.
type CrossReport struct {
	Since, Until time.Time
	Records      int // records of the period read
	Matched      int // records whose event the log holds unchanged
	Superseded   int // fixity checks whose row a later check of the same run replaced
	Problems     []evidence.Problem
}

// CrossCheck compares Mill's records of [since, until) with the log's
// events of that period (logged: the events whose time is in it, by ID;
// evidence.Events reads them checked against the signed log). It names
// each mismatch: a record that cannot be an event; a record with no event
// (never logged, or changed since: its time or key moved); a record whose
// event differs (changed since: the fields that differ); an event whose
// record is gone (deleted, or changed so that it derives another ID). A
// fixity check whose row a later check of the same run and copy replaced
// (a redelivered check) is not a mismatch.
func CrossCheck(ctx context.Context, src CheckSources, u Users, logged map[string]*evidence.Event, since, until time.Time, page int) (*CrossReport, error) {
	r := &CrossReport{Since: since, Until: until}
	seen := map[string]bool{}
	type miss struct {
		where string
		e     *evidence.Event
	}
	var missing []miss
	check := func(where string, e *evidence.Event, err error) {
		switch {
		case err != nil:
			r.Problems = append(r.Problems, evidence.Problem{Where: where, What: "cannot be an event: " + err.Error()})
		case e == nil:
		case logged[e.ID] == nil:
			missing = append(missing, miss{where, e})
		default:
			seen[e.ID] = true
			if d := Diff(logged[e.ID], e); d != "" {
				r.Problems = append(r.Problems, evidence.Problem{Where: where, What: fmt.Sprintf("differs from its event %s: %s", e.ID, d)})
			} else {
				r.Matched++
			}
		}
	}
	for tok := ""; ; {
		rows, next, err := src.Bits.Checked(ctx, since, until, tok, page)
		if err != nil {
			return nil, err
		}
		r.Records += len(rows)
		for _, row := range rows {
			e, err := FromRow(row, u)
			check("bit-log row "+row.Key(), e, err)
		}
		if tok = next; tok == "" {
			break
		}
	}
	for tok := ""; ; {
		es, next, err := src.Audit.Between(ctx, since, until, tok, page)
		if err != nil {
			return nil, err
		}
		r.Records += len(es)
		for _, en := range es {
			e, err := FromEntry(en, u)
			check(fmt.Sprintf("audit-log entry %s %s %s", auditlog.ItemKey(en.Account, en.StoreID, en.SpaceID, en.ContentID),
				en.Time.UTC().Format(time.RFC3339Nano), en.Action), e, err)
		}
		if tok = next; tok == "" {
			break
		}
	}
	// A record with no event of its ID whose copy, type and time an
	// unmatched event shares was changed in a field its ID is made of
	// (an audit entry's hash covers its checksum and user): name the
	// fields.
	byAction := map[string][]string{}
	for id, e := range logged {
		if !seen[id] {
			k := string(e.Type) + " " + evidence.CopyID(e.Object) + " " + e.Time
			byAction[k] = append(byAction[k], id)
		}
	}
	for _, m := range missing {
		k := string(m.e.Type) + " " + evidence.CopyID(m.e.Object) + " " + m.e.Time
		if c := byAction[k]; len(c) > 0 {
			sort.Strings(c)
			seen[c[0]], byAction[k] = true, c[1:]
			r.Problems = append(r.Problems, evidence.Problem{Where: m.where, What: fmt.Sprintf("differs from its event %s (now %s): %s", c[0], m.e.ID, Diff(logged[c[0]], m.e))})
			continue
		}
		r.Problems = append(r.Problems, evidence.Problem{Where: m.where, What: fmt.Sprintf("no event %s in the log (a %s of %s at %s): the record was changed, or never logged", m.e.ID, m.e.Type, evidence.CopyID(m.e.Object), m.e.Time)})
	}
	ids := make([]string, 0, len(logged))
	for id := range logged {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := logged[id]
		if e.Type == evidence.FixityCheck {
			superseded, err := replaced(ctx, src.Rows, e)
			if err != nil {
				return nil, err
			}
			if superseded {
				r.Superseded++
				continue
			}
			r.Problems = append(r.Problems, evidence.Problem{Where: "event " + id, What: fmt.Sprintf("no bit-log row holds this fixity check of %s at %s (%s): the row was deleted, or changed", evidence.CopyID(e.Object), e.Time, e.Detail)})
			continue
		}
		r.Problems = append(r.Problems, evidence.Problem{Where: "event " + id, What: fmt.Sprintf("no audit-log entry holds this %s of %s at %s: the entry was deleted, or changed", e.Type, evidence.CopyID(e.Object), e.Time)})
	}
	if src.Index != nil {
		if err := indexFacts(ctx, src.Index, logged, r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// replaced reports whether the bit log holds the row of e's run and copy
// checked after e: a redelivered check replaced it.
func replaced(ctx context.Context, rows bitlog.Log, e *evidence.Event) (bool, error) {
	run, ok := RunOfDetail(e.Detail)
	if !ok || rows == nil {
		return false, nil
	}
	at, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return false, nil
	}
	f := bitlog.Filter{RunID: run, Account: e.Object.Account, StoreID: e.Object.Store, SpaceID: e.Object.Space, ContentID: e.Object.ContentID}
	for {
		rs, next, err := rows.Results(ctx, f)
		if err != nil {
			return false, err
		}
		for _, r := range rs {
			if r.RunID == run && r.CheckedAt.After(at) {
				return true, nil
			}
		}
		if next == "" {
			return false, nil
		}
		f.After = next
	}
}

// Diff names the fields other than the ID in which the logged event and
// the one derived from the record now differ ("" when none): "outcome:
// log "success", record "failure"".
func Diff(logged, now *evidence.Event) string {
	var a, b map[string]any
	ja, _ := json.Marshal(logged) // events always marshal
	jb, _ := json.Marshal(now)
	_ = json.Unmarshal(ja, &a)
	_ = json.Unmarshal(jb, &b)
	var out []string
	diffMaps("", a, b, &out)
	sort.Strings(out)
	s := ""
	for i, d := range out {
		if i > 0 {
			s += "; "
		}
		s += d
	}
	return s
}

func diffMaps(prefix string, a, b map[string]any, out *[]string) {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	for k := range keys {
		if prefix == "" && k == "id" {
			continue // named beside the fields
		}
		am, aok := a[k].(map[string]any)
		bm, bok := b[k].(map[string]any)
		if aok && bok {
			diffMaps(prefix+k+".", am, bm, out)
			continue
		}
		if !reflect.DeepEqual(a[k], b[k]) {
			*out = append(*out, fmt.Sprintf("%s%s: log %s, record %s", prefix, k, show(a[k]), show(b[k])))
		}
	}
}

func show(v any) string {
	if v == nil {
		return "(none)"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
