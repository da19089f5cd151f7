package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/reportstore"
)

// resultsPage is how many results a page lists.
const resultsPage = 100

// ErrForeignReport: a report location outside the configured reports
// bucket or directory; the console serves nothing from elsewhere, whatever
// the bit log says.
var ErrForeignReport = reportstore.ErrForeign

// ReportOpener opens bit-integrity report files (bitlog.Report.Location):
// the reading half of a reportstore.Store (s3reportstore, fsreportstore).
//
// Contract: Open returns the file's content and size, or an error wrapping
// ErrForeignReport for a location outside its bucket or directory (nothing
// is read then).
type ReportOpener interface {
	Open(ctx context.Context, location string) (io.ReadCloser, int64, error)
}

func (s *Server) bitRoutes(route routeFunc) {
	route("GET /bit", auth.RoleViewer, s.runsPage)
	route("GET /bit/run", auth.RoleViewer, s.runPage)
	route("GET /bit/space", auth.RoleViewer, s.spacePage)
	route("GET /bit/results", auth.RoleViewer, s.resultsPage)
	route("GET /bit/report.tsv", auth.RoleViewer, s.reportTSV)
}

// selection returns the selection of a bit page from the query string; it
// writes the page and returns false when there is no bit log or the
// selection is bad.
func (s *Server) selection(w http.ResponseWriter, r *http.Request, u *auth.User) (bitQuery, bool) {
	if s.noBitLog(w, r, u) {
		return bitQuery{}, false
	}
	q, err := parseBitQuery(r.URL.Query())
	if err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad selection", err.Error())
		return q, false
	}
	return q, true
}

// noBitLog tells that no database is configured.
func (s *Server) noBitLog(w http.ResponseWriter, r *http.Request, u *auth.User) bool {
	if s.cfg.BitLog != nil {
		return false
	}
	s.render(w, r, http.StatusOK, "missing", page{Title: "Bit integrity", Nav: "bit", User: u, Data: missingData{
		Heading: "Bit integrity needs the database",
		Text:    "The console was started without --database-url, so it cannot read the bit log (PostgreSQL). Start it with the same --database-url as Workman.",
	}})
	return true
}

// runRow is one bit-integrity run.
type runRow struct {
	RunID  string
	Spaces int
	Counts bitlog.Counts
	Result bitlog.Result
	Latest time.Time
}

// worse returns the worse of two results (FAILURE, then ERROR, then
// SUCCESS, then EMPTY: a run is EMPTY only when it checked nothing).
func worse(a, b bitlog.Result) bitlog.Result {
	rank := map[bitlog.Result]int{bitlog.ResultFailure: 4, bitlog.ResultError: 3, bitlog.ResultSuccess: 2, bitlog.ResultEmpty: 1}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

func addCounts(a *bitlog.Counts, b bitlog.Counts) {
	a.Total += b.Total
	a.Success += b.Success
	a.Failure += b.Failure
	a.Error += b.Error
}

type runsData struct {
	Runs    []runRow
	Partial bool // the bit log held more reports than one read returns
	Now     time.Time
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	if s.noBitLog(w, r, u) {
		return
	}
	reps, err := s.cfg.BitLog.Reports(r.Context(), bitlog.ReportFilter{Limit: bitlog.MaxPageSize})
	if err != nil {
		s.fail(w, r, "reading the bit log", err)
		return
	}
	byRun := map[string]*runRow{}
	for _, rep := range reps {
		rr := byRun[rep.RunID]
		if rr == nil {
			rr = &runRow{RunID: rep.RunID}
			byRun[rep.RunID] = rr
		}
		rr.Spaces++
		addCounts(&rr.Counts, rep.Counts)
		rr.Result = worse(rr.Result, rep.Result)
		if rep.CreatedAt.After(rr.Latest) {
			rr.Latest = rep.CreatedAt
		}
	}
	d := runsData{Partial: len(reps) == bitlog.MaxPageSize, Now: s.cfg.Clock.Now()}
	for _, rr := range byRun {
		d.Runs = append(d.Runs, *rr)
	}
	slices.SortFunc(d.Runs, func(a, b runRow) int { return cmp.Compare(b.RunID, a.RunID) })
	s.render(w, r, http.StatusOK, "runs", page{Title: "Bit integrity", Nav: "bit", User: u, Data: d})
}

type runData struct {
	Q       bitQuery
	Reports []bitlog.Report
	Counts  bitlog.Counts
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	q, ok := s.selection(w, r, u)
	if !ok {
		return
	}
	reps, err := s.cfg.BitLog.Reports(r.Context(), bitlog.ReportFilter{RunID: q.Run, Limit: bitlog.MaxPageSize})
	if err != nil {
		s.fail(w, r, "reading the bit log", err)
		return
	}
	slices.SortFunc(reps, func(a, b bitlog.Report) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.StoreID, b.StoreID), cmp.Compare(a.SpaceID, b.SpaceID))
	})
	d := runData{Q: q, Reports: reps}
	for _, rep := range reps {
		addCounts(&d.Counts, rep.Counts)
	}
	s.render(w, r, http.StatusOK, "run", page{Title: "Run " + q.Run, Nav: "bit", User: u, Data: d})
}

// caseCount is the items of one case and result in a space.
type caseCount struct {
	Case   int
	Result bitlog.Result
	Count  int64
}

type spaceData struct {
	Q        bitQuery
	Report   *bitlog.Report
	Cases    []caseCount
	Scanned  int
	Complete bool
	Budget   int
	TSV      bool
}

func (s *Server) spacePage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	q, ok := s.selection(w, r, u)
	if !ok {
		return
	}
	if q.Account == "" || q.Store == "" || q.Space == "" {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad selection", "A space page needs run, account, store and space.")
		return
	}
	ctx := r.Context()
	d := spaceData{Q: q, Budget: s.cfg.ScanBudget}
	reps, err := s.cfg.BitLog.Reports(ctx, bitlog.ReportFilter{RunID: q.Run, Account: q.Account, StoreID: q.Store, SpaceID: q.Space, Limit: 1})
	if err != nil {
		s.fail(w, r, "reading the bit log", err)
		return
	}
	if len(reps) > 0 {
		d.Report = &reps[0]
		d.TSV = s.cfg.Reports != nil && reps[0].Location != ""
	}
	// Counts by case: the bit log counts by result only, so the rows are
	// read (up to the scan budget).
	counts := map[[2]string]int64{}
	f := bitlog.Filter{RunID: q.Run, Account: q.Account, StoreID: q.Store, SpaceID: q.Space}
	_, _, read, err := scan(ctx, s.cfg.BitLog, f, func(row bitlog.Row) bool {
		counts[[2]string{strconv.Itoa(row.Case), string(row.Result)}]++
		return false
	}, 0, s.cfg.ScanBudget)
	if err != nil {
		s.fail(w, r, "reading the bit log", err)
		return
	}
	d.Scanned, d.Complete = read.rows, read.done
	for k, n := range counts {
		c, _ := strconv.Atoi(k[0])
		d.Cases = append(d.Cases, caseCount{Case: c, Result: bitlog.Result(k[1]), Count: n})
	}
	slices.SortFunc(d.Cases, func(a, b caseCount) int { return cmp.Or(cmp.Compare(a.Case, b.Case), cmp.Compare(a.Result, b.Result)) })
	s.render(w, r, http.StatusOK, "space", page{Title: "Space " + q.Space, Nav: "bit", User: u, Data: d})
}

// repairNote matches how a bit-log row records a repair: the bit-error
// processor's resolution ("resolution: case 2: repaired from store 2") or
// the re-check that followed it ("re-check after case 2: repaired from
// store 2", bit.RecheckNote), as processors/biterror and processors/bit
// write them.
var repairNote = regexp.MustCompile(`(resolution:|re-check after) case [248]: repaired from store `)

// Repaired reports whether a bit-log row records a repair.
func Repaired(row bitlog.Row) bool { return repairNote.MatchString(row.Details) }

type resultsData struct {
	Q        bitQuery
	Rows     []bitlog.Row
	Next     string
	Scanned  int
	Filtered bool // rows were read and filtered in the console
	Budget   int
}

func (s *Server) resultsPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	q, ok := s.selection(w, r, u)
	if !ok {
		return
	}
	f := bitlog.Filter{RunID: q.Run, Account: q.Account, StoreID: q.Store, SpaceID: q.Space, Result: q.Result, After: q.After}
	var keep func(bitlog.Row) bool
	if q.Case >= 0 || q.Repaired {
		keep = func(row bitlog.Row) bool {
			return (q.Case < 0 || row.Case == q.Case) && (!q.Repaired || Repaired(row))
		}
	}
	rows, next, read, err := scan(r.Context(), s.cfg.BitLog, f, keep, resultsPage, s.cfg.ScanBudget)
	if errors.Is(err, bitlog.ErrBadPageToken) {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad page", "That page link is not valid.")
		return
	}
	if err != nil {
		s.fail(w, r, "reading the bit log", err)
		return
	}
	d := resultsData{Q: q, Rows: rows, Next: next, Scanned: read.rows, Filtered: keep != nil, Budget: s.cfg.ScanBudget}
	s.render(w, r, http.StatusOK, "results", page{Title: "Bit results", Nav: "bit", User: u, Data: d})
}

type scanned struct {
	rows int
	done bool // the end of the results was reached
}

// scan pages through the results matching f. With keep nil, it returns one
// page of want rows. With keep, it reads rows until want of them are kept
// (want ≤ 0: none is wanted, keep only looks) or budget rows were read;
// next then continues right after the last row read.
func scan(ctx context.Context, l bitlog.Log, f bitlog.Filter, keep func(bitlog.Row) bool, want, budget int) ([]bitlog.Row, string, scanned, error) {
	if keep == nil {
		f.Limit = want
		rows, next, err := l.Results(ctx, f)
		return rows, next, scanned{rows: len(rows), done: next == ""}, err
	}
	var out []bitlog.Row
	var st scanned
	for {
		f.Limit = min(bitlog.MaxPageSize, max(budget-st.rows, 1))
		rows, next, err := l.Results(ctx, f)
		if err != nil {
			return nil, "", st, err
		}
		for i, row := range rows {
			st.rows++
			if keep(row) {
				out = append(out, row)
			}
			if (want > 0 && len(out) >= want) || st.rows >= budget {
				if i == len(rows)-1 && next == "" {
					st.done = true
					return out, "", st, nil
				}
				return out, bitlog.EncodeToken(bitlog.KeyOf(row)), st, nil
			}
		}
		if next == "" {
			st.done = true
			return out, "", st, nil
		}
		f.After = next
	}
}

// reportTSV sends a space's report file.
func (s *Server) reportTSV(w http.ResponseWriter, r *http.Request, u *auth.User) {
	q, ok := s.selection(w, r, u)
	if !ok {
		return
	}
	if q.Run == "" || q.Account == "" || q.Store == "" || q.Space == "" {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad selection", "A report needs run, account, store and space.")
		return
	}
	if s.cfg.Reports == nil {
		s.errorPage(w, r, u, http.StatusNotFound, "No reports", "The console was started without a reports location.")
		return
	}
	ctx := r.Context()
	reps, err := s.cfg.BitLog.Reports(ctx, bitlog.ReportFilter{RunID: q.Run, Account: q.Account, StoreID: q.Store, SpaceID: q.Space, Limit: 1})
	if err != nil {
		s.fail(w, r, "reading the bit log", err)
		return
	}
	if len(reps) == 0 || reps[0].Location == "" {
		s.errorPage(w, r, u, http.StatusNotFound, "No report", "The bit log has no report file for that space and run.")
		return
	}
	body, size, err := s.cfg.Reports.Open(ctx, reps[0].Location)
	if errors.Is(err, ErrForeignReport) {
		s.cfg.Logger.Warn("console: report location refused", "location", reps[0].Location, "err", err)
		s.errorPage(w, r, u, http.StatusForbidden, "Report not served", "The report's location is outside the reports bucket the console serves.")
		return
	}
	if err != nil {
		s.fail(w, r, "reading the report", err)
		return
	}
	defer body.Close()
	name := strings.Map(func(c rune) rune {
		if c == '-' || c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') {
			return c
		}
		return '_'
	}, fmt.Sprintf("%s-%s-%s-%s.tsv", q.Account, q.Store, q.Space, q.Run))
	w.Header().Set("Content-Type", "text/tab-separated-values; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	if size > 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	}
	if _, err := io.Copy(w, body); err != nil {
		s.cfg.Logger.Warn("console: sending a report", "location", reps[0].Location, "err", err)
	}
}
