package devmode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/biterror"
)

// historyLog is a bit log that also remembers every row recorded, in order:
// a repaired item's row is replaced by its re-check, and the dev mode wants
// to show what was found first.
type historyLog struct {
	bitlog.Log
	mu   sync.Mutex
	rows []bitlog.Row
}

func (h *historyLog) Record(ctx context.Context, r bitlog.Row) error {
	if err := h.Log.Record(ctx, r); err != nil {
		return err
	}
	h.mu.Lock()
	h.rows = append(h.rows, r)
	h.mu.Unlock()
	return nil
}

func (h *historyLog) history() []bitlog.Row {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.rows)
}

func rowKey(r bitlog.Row) string {
	return Item{r.Account, r.StoreID, r.SpaceID, r.ContentID}.String()
}

func (e *env) problem(format string, args ...any) {
	e.r.Problems = append(e.r.Problems, fmt.Sprintf(format, args...))
}

func (e *env) verify(ctx context.Context) error {
	r := e.r
	// What the bit check found first for each item, over the runs.
	for _, row := range e.hist.history() {
		if !slices.Contains(r.BitRunIDs, row.RunID) {
			continue
		}
		k := rowKey(row)
		c, seen := r.firstCase[k]
		switch {
		case !seen:
			r.firstCase[k] = row.Case
		case c == 1 && row.Case != 1:
			r.firstCase[k] = row.Case
		}
	}
	r.Checked = len(r.firstCase)
	for _, c := range r.firstCase {
		r.Cases[c]++
	}
	faulted := map[string]*Fault{}
	for _, f := range r.Faults {
		faulted[f.Item.String()] = f
		f.Seen = r.firstCase[f.Item.String()]
		if f.Seen != f.WantCase {
			f.Note = fmt.Sprintf("found as case %d, want case %d", f.Seen, f.WantCase)
		}
	}
	if want := r.Items + r.Duplicated; r.Checked != want {
		e.problem("bit check: %d items have a result, want %d (every seeded item and every replica)", r.Checked, want)
	}
	var fp []string
	for k, c := range r.firstCase {
		if c != 1 && faulted[k] == nil {
			fp = append(fp, fmt.Sprintf("%s (case %d)", k, c))
		}
	}
	for k, cases := range r.bitErrorKeys {
		if faulted[k] == nil {
			fp = append(fp, fmt.Sprintf("%s (BIT_ERROR case %s)", k, strings.Join(cases, ",")))
		}
	}
	sort.Strings(fp)
	for _, s := range fp {
		e.problem("false positive: %s", s)
	}

	// Repairs and corrections.
	for _, f := range r.Faults {
		note, err := e.checkFixed(ctx, f)
		if err != nil {
			return err
		}
		f.Fixed = note == ""
		if note != "" {
			f.Note = strings.TrimPrefix(f.Note+"; "+note, "; ")
		}
		if f.Note != "" {
			e.problem("%s %s: %s", f.Kind, f.Item, f.Note)
		}
	}
	rep, err := CheckReplicas(ctx, e.reg, e.pols, e.deps.Stores.Open)
	if err != nil {
		return err
	}
	for _, p := range rep.Problems {
		e.problem("after the run: %s", p)
	}

	// Dead letters.
	dlq := e.deps.MemQueue(queue.KeyDeadLetter)
	for _, m := range dlq.Messages() {
		d, err := deadletter.Decode(&queue.Message{ID: m.ID, Body: m.Body, Attributes: m.Attributes})
		desc := string(m.Body)
		if err == nil {
			desc = fmt.Sprintf("%s from %s (%s): %s", d.TaskType, d.SourceQueue, d.Reason, d.Error)
		}
		r.DeadLettered = append(r.DeadLettered, desc)
		e.problem("dead-lettered: %s", desc)
	}

	// Reports: one per space checked per run, each with its file.
	for _, run := range r.BitRunIDs {
		reps, err := e.deps.BitLog.Reports(ctx, bitlog.ReportFilter{RunID: run, Limit: bitlog.MaxPageSize})
		if err != nil {
			return err
		}
		r.Reports = append(r.Reports, reps...)
	}
	reps := r.Reports
	_ = filepath.WalkDir(r.ReportDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".tsv") {
			r.ReportFiles = append(r.ReportFiles, p)
		}
		return nil
	})
	if want := e.bitSpaces; len(reps) != want || len(r.ReportFiles) != want {
		e.problem("reports: %d recorded and %d files written, want %d (one per space checked)", len(reps), len(r.ReportFiles), want)
	}
	return nil
}

// checkFixed checks the outcome expected for a fault (docs/ARCHITECTURE.md,
// Bit integrity); "" when it happened.
func (e *env) checkFixed(ctx context.Context, f *Fault) (string, error) {
	i := f.Item
	p, err := e.deps.Stores.Open(ctx, i.Account, i.Store)
	if err != nil {
		return "", err
	}
	switch f.WantCase {
	case 2, 8: // the replica's bytes must be back and healthy
		rc, info, err := p.Get(ctx, i.Space, i.Content)
		if errors.Is(err, storage.ErrNotFound) {
			return "still missing from storage", nil
		}
		if err != nil {
			return "", err
		}
		sum, _, err := storage.MD5Hex(rc)
		rc.Close()
		if err != nil {
			return "", err
		}
		if sum != info.Checksum {
			return fmt.Sprintf("not repaired: content MD5 %s, recorded %s", sum, info.Checksum), nil
		}
		if f.WantCase == 2 {
			if cs := e.r.bitErrorKeys[i.String()]; !slices.Contains(cs, "2") {
				return "no BIT_ERROR case 2 was processed for it", nil
			}
			a, err := e.deps.AuditLog.Latest(ctx, i.Account, i.Store, i.Space, i.Content)
			if err != nil || a.UserID != biterror.DefaultUserID {
				return "its latest audit entry is not the repair's", nil
			}
		}
	case 5:
		info, err := p.Head(ctx, i.Space, i.Content)
		if err != nil {
			return "", err
		}
		row, err := e.deps.Index.Get(ctx, contentindex.Item{Account: i.Account, StoreID: i.Store, SpaceID: i.Space, ContentID: i.Content})
		if err != nil {
			return "", err
		}
		if row.Checksum != info.Checksum {
			return fmt.Sprintf("index checksum still %s, storage %s", row.Checksum, info.Checksum), nil
		}
	case 7:
		info, err := p.Head(ctx, i.Space, i.Content)
		if err != nil {
			return "", err
		}
		a, err := e.deps.AuditLog.Latest(ctx, i.Account, i.Store, i.Space, i.Content)
		if err != nil {
			return fmt.Sprintf("audit log still has no entry (%v)", err), nil
		}
		if a.Checksum != info.Checksum {
			return fmt.Sprintf("audit entry checksum %s, storage %s", a.Checksum, info.Checksum), nil
		}
	}
	return "", nil
}

var caseNames = map[int]string{
	1: "healthy", 2: "content went sour", 3: "provider checksum wrong", 4: "storage side unverifiable",
	5: "content index wrong", 6: "audit log out of sync", 7: "audit entry missing",
	8: "removed from storage, not captured", 9: "added in storage, not captured",
	10: "updated in storage, not captured", 11: "deleted, fully processed",
}

func (e *env) printSummary() {
	r := e.r
	w := e.out
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Mill dev mode — summary")
	fmt.Fprintf(w, "  directory       %s\n", r.Dir)
	fmt.Fprintf(w, "  content         %d accounts, %d stores, %d spaces, %d items seeded (%.1f KiB)\n",
		r.Accounts, r.Stores, r.Spaces, r.Items, float64(r.Bytes)/1024)
	fmt.Fprintln(w, "  tasks processed")
	total := 0
	for _, t := range task.Types {
		m := r.Tasks[t]
		if len(m) == 0 {
			continue
		}
		var parts []string
		n := 0
		for _, res := range []string{processors.ResultSuccess, processors.ResultRetryAfter, processors.ResultFailure,
			processors.ResultPermanent, processors.ResultTimeout, processors.ResultPanic, processors.ResultCanceled} {
			if m[res] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", m[res], res))
				n += m[res]
			}
		}
		total += n
		fmt.Fprintf(w, "    %-12s  %5d  (%s)\n", t, n, strings.Join(parts, ", "))
	}
	fmt.Fprintf(w, "    %-12s  %5d\n", "total", total)
	fmt.Fprintf(w, "  duplication     %d items copied to the destinations of %d store policies, all matching their sources\n", r.Duplicated, r.Policies)
	fmt.Fprintf(w, "  bit check       runs %s: %d items checked on every store, by the case first found\n", strings.Join(r.BitRunIDs, " and "), r.Checked)
	cases := make([]int, 0, len(r.Cases))
	for c := range r.Cases {
		cases = append(cases, c)
	}
	sort.Ints(cases)
	for _, c := range cases {
		fmt.Fprintf(w, "    case %-2d %-36s %5d\n", c, caseNames[c], r.Cases[c])
	}
	if len(r.BitErrors) > 0 {
		var parts []string
		for _, c := range slices.Sorted(maps.Keys(r.BitErrors)) {
			parts = append(parts, fmt.Sprintf("case %d ×%d", c, r.BitErrors[c]))
		}
		fmt.Fprintf(w, "    BIT_ERROR tasks: %s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintln(w, "  injected faults")
	fixed := 0
	for _, f := range r.Faults {
		status := "detected as case " + fmt.Sprint(f.Seen) + ", " + f.Fix + ": done"
		if f.Fixed && f.Note == "" {
			fixed++
		} else {
			status = "NOT OK: " + f.Note
		}
		fmt.Fprintf(w, "    %-20s %s\n      %s\n", f.Kind, f.Item, status)
	}
	fmt.Fprintf(w, "  repairs         %d of %d faults repaired or corrected\n", fixed, len(r.Faults))
	fmt.Fprintf(w, "  dead-lettered   %d\n", len(r.DeadLettered))
	for _, d := range r.DeadLettered {
		fmt.Fprintf(w, "    %s\n", d)
	}
	byResult := map[bitlog.Result]int{}
	for _, rep := range r.Reports {
		byResult[rep.Result]++
	}
	runs := max(len(r.BitRunIDs), 1)
	fmt.Fprintf(w, "  reports         %d space reports: each run reports every space on every store that holds it\n", len(r.Reports))
	fmt.Fprintf(w, "                  (the %d spaces on their primary and destination stores: %d per run) × %d runs\n", r.Spaces, len(r.Reports)/runs, runs)
	fmt.Fprintf(w, "                  SUCCESS %d, FAILURE %d, ERROR %d", byResult[bitlog.ResultSuccess], byResult[bitlog.ResultFailure], byResult[bitlog.ResultError])
	if n := byResult[bitlog.ResultEmpty]; n > 0 {
		fmt.Fprintf(w, ", EMPTY %d (nothing checked)", n)
	}
	fmt.Fprint(w, ": what each run found")
	if byResult[bitlog.ResultFailure]+byResult[bitlog.ResultError] > 0 {
		if fixed == len(r.Faults) {
			fmt.Fprint(w, "; the faults behind FAILURE and ERROR have been repaired or corrected since (injected faults, above)")
		} else {
			fmt.Fprint(w, "; not every fault behind them was repaired (verdict, below)")
		}
	}
	fmt.Fprintf(w, "\n                  %d TSV files under %s\n", len(r.ReportFiles), r.ReportDir)
	if len(r.Stats) > 0 {
		fmt.Fprintf(w, "  storage stats   %d spaces counted, each equal to a listing of the space (millctl stats --by store)\n", r.StatsSpaces)
		for _, g := range r.Stats {
			fmt.Fprintf(w, "    %-8s store %-2s %3d spaces %6d items %12s\n", g.Account, g.StoreID, g.Spaces, g.Items, spacestats.FormatBytes(g.Bytes))
		}
	}
	fmt.Fprintf(w, "  notifications   %d, published to SNS with --notify-topic-arn (here kept in memory)\n", len(r.Notifications))
	byType := map[string][]notify.Event{}
	for _, n := range r.Notifications {
		byType[n.Type] = append(byType[n.Type], n)
	}
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		ns := byType[t]
		fmt.Fprintf(w, "    %-24s %3d  e.g. %q\n", t, len(ns), ns[0].Subject)
	}
	var ph []string
	for _, p := range r.Phases {
		ph = append(ph, fmt.Sprintf("%s %.1fs", p.Name, p.Elapsed.Seconds()))
	}
	fmt.Fprintf(w, "  time            %.1fs (%s)\n", r.Elapsed.Seconds(), strings.Join(ph, ", "))
	if len(r.Problems) == 0 {
		fmt.Fprintf(w, "  verdict         OK: all %d faults found with their expected case and repaired; no false positives; nothing dead-lettered\n", len(r.Faults))
	} else {
		fmt.Fprintf(w, "  verdict         FAILED: %d expectation(s) not met\n", len(r.Problems))
		for _, p := range r.Problems {
			fmt.Fprintf(w, "    - %s\n", p)
		}
	}
}
