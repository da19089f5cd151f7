package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// maxDLPage bounds a dead-letter page number (the index holds far fewer
// pages).
const maxDLPage = 1 << 20

// MaxRedriveRate is the highest rate a redrive from the console may ask
// for (messages per second).
const MaxRedriveRate = 1000

func (s *Server) deadLetterRoutes(route routeFunc) {
	route("GET /dead-letters", auth.RoleViewer, s.deadLettersPage)
	route("POST /dead-letters/rescan", auth.RoleViewer, s.rescanDeadLetters)
	route("GET /dead-letters/redrive", auth.RoleOperator, s.redrivePage)
	route("POST /dead-letters/redrive", auth.RoleOperator, s.redrive)
	route("GET /dead-letters/purge", auth.RoleOperator, s.purgePage)
	route("POST /dead-letters/purge", auth.RoleOperator, s.purge)
	route("GET /dead-letters/{id}", auth.RoleViewer, s.deadLetterPage)
}

type deadLettersData struct {
	dlView
	Filter           deadletter.Filter
	Describe         string
	Query            string // the filter as a query, for links
	Types, Sources   []string
	Now              time.Time
	Prev, Next, Self string
	Stale            bool // the page link was for an earlier scan
	Refresh          bool // a scan or job runs: the page refreshes itself
	Rescan           time.Duration
	Queue            string
}

func (s *Server) deadLettersPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	f, ok := s.dlFilterOr(w, r, u)
	if !ok {
		return
	}
	pg := 1
	if p := r.FormValue("page"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > maxDLPage {
			s.errorPage(w, r, u, http.StatusBadRequest, "Bad page", fmt.Sprintf("page %s: want a page number from 1 to %d.", quoteSafe(p), maxDLPage))
			return
		}
		pg = n
	}
	s.dl.refresh(false)
	v := s.dl.view(r.Context(), f, pg, dlFirstPageWait)
	d := deadLettersData{dlView: v, Filter: f, Describe: describe(f), Query: dlQuery(f), Now: s.cfg.Clock.Now(),
		Rescan: s.cfg.DeadLetterRescan, Queue: s.dl.in.QueueName(), Types: taskTypes(), Sources: workQueueKeys()}
	d.Refresh = v.Scanning || v.Job.running()
	gen := ""
	if v.Snap != nil && !v.Partial {
		gen = strconv.Itoa(v.Snap.Gen)
		// Page 1 is the newest dead letters of any scan: no warning when
		// the page, refreshing itself while a rescan ran, shows the new one.
		d.Stale = v.Page > 1 && r.FormValue("gen") != "" && r.FormValue("gen") != gen
	}
	d.Self = "/dead-letters" + dlQuery(f, "page", strconv.Itoa(v.Page), "gen", gen)
	if v.Page > 1 {
		d.Prev = "/dead-letters" + dlQuery(f, "page", strconv.Itoa(v.Page-1), "gen", gen)
	}
	if v.Page < v.Pages {
		d.Next = "/dead-letters" + dlQuery(f, "page", strconv.Itoa(v.Page+1), "gen", gen)
	}
	s.render(w, r, http.StatusOK, "deadletters", page{Title: "Dead letters", Nav: "dead-letters", User: u, Msg: s.dlNotice(r), Data: d})
}

// dlNotices are the fixed notices of the dead-letter pages (?msg=…).
var dlNotices = map[string]string{
	"redrive":    "Redrive started. Progress shows below; every change is in the change log.",
	"purge":      "Purge started. Progress shows below; every change is in the change log.",
	"rescan":     "Rescanning the queue.",
	"unrecorded": unrecordedNotice,
}

func (s *Server) dlNotice(r *http.Request) string {
	return strings.Join(noticeTexts(r, dlNotices), " ")
}

func taskTypes() []string {
	out := make([]string, len(task.Types))
	for i, t := range task.Types {
		out[i] = string(t)
	}
	return out
}

func workQueueKeys() []string {
	return slices.DeleteFunc(slices.Clone(queue.AllKeys), func(k string) bool { return k == queue.KeyDeadLetter })
}

func (s *Server) rescanDeadLetters(w http.ResponseWriter, r *http.Request, _ *auth.User) {
	s.dl.refresh(true)
	http.Redirect(w, r, "/dead-letters?msg=rescan", http.StatusSeeOther)
}

type deadLetterData struct {
	Row         *dlRow
	Whole       *deadletter.Entry // read from the queue (the index cut the body)
	Entry       *deadletter.Entry // what is shown
	Provenance  []deadletter.Field
	TaskFormat  string
	Task        string
	TaskErr     string
	Body        string
	BodyCut     bool
	BodySize    int
	WholeErr    string
	Query       string
	Unresolved  string
	ScannedFrom string
}

func (s *Server) deadLetterPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	id := r.PathValue("id")
	if wh := r.FormValue("whole"); wh != "" && wh != "1" {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad request", "whole: want 1 or nothing.")
		return
	}
	d := deadLetterData{Row: s.dl.row(id), Query: dlQuery(deadletter.Filter{ID: id})}
	if d.Row == nil || (d.Row.BodyCut && r.FormValue("whole") == "1") {
		ctx, cancel := context.WithTimeout(r.Context(), time.Minute)
		defer cancel()
		e, err := s.dl.find(ctx, id)
		switch {
		case errors.Is(err, deadletter.ErrNotFound) && d.Row == nil:
			s.errorPage(w, r, u, http.StatusNotFound, "No such dead letter", "It is not on the dead-letter queue (any more): "+err.Error())
			return
		case err != nil && d.Row == nil:
			s.errorPage(w, r, u, http.StatusServiceUnavailable, "Not read", err.Error())
			return
		case err != nil:
			d.WholeErr = err.Error()
		default:
			d.Whole = e
		}
	}
	if d.Whole != nil {
		d.Entry, d.BodySize = d.Whole, len(d.Whole.Letter.Body)
	} else {
		d.Entry, d.BodySize, d.BodyCut = d.Row.Entry, d.Row.BodySize, d.Row.BodyCut
	}
	d.Provenance, d.Body = d.Entry.Provenance(), string(d.Entry.Letter.Body)
	if d.Entry.Unresolved != nil {
		d.Unresolved = d.Entry.Unresolved.Error()
	}
	if f, desc, err := deadletter.DescribeTask(d.Entry.Letter.Body); err == nil {
		d.TaskFormat, d.Task = map[task.Format]string{task.FormatJSON: "JSON", task.FormatProperties: "properties"}[f], desc
	} else if !d.BodyCut {
		d.TaskErr = err.Error()
	}
	s.render(w, r, http.StatusOK, "deadletter", page{Title: "Dead letter " + d.Entry.Message.ID, Nav: "dead-letters", User: u, Data: d})
}

type redriveData struct {
	Filter     deadletter.Filter
	Describe   string
	Query      string
	Snap       *dlSnap
	Partial    bool
	Targets    []targetCount
	Would      int
	Skipped    int
	Refused    []string
	RefusedN   int
	Sample     []redriveSample
	Rate       string
	To         string
	Keep       bool
	Sources    []string
	Error      string
	JobRunning bool
}

type targetCount struct {
	Queue string
	N     int
}

type redriveSample struct {
	Row    *dlRow
	Target string
}

// redrivePage is the dry run: what the console's last scan says a redrive
// with these settings would do.
func (s *Server) redrivePage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	f, ok := s.dlFilterOr(w, r, u)
	if !ok {
		return
	}
	d := redriveData{Filter: f, Describe: describe(f), Query: dlQuery(f), Rate: cmpOr(r.FormValue("rate"), "10"), Sources: workQueueKeys()}
	status := http.StatusOK
	rate, to, keep, err := redriveForm(r)
	if err != nil {
		d.Error, status = err.Error(), http.StatusBadRequest
	}
	d.To, d.Keep = to, keep
	if r.FormValue("rate") != "" && err == nil {
		d.Rate = strconv.FormatFloat(rate, 'f', -1, 64)
	}
	s.dl.refresh(false)
	s.dl.view(r.Context(), f, 1, dlFirstPageWait) // a cold console: the first rows
	rows, snap := s.dl.matching(f)
	d.Snap = snap
	d.Partial = snap != nil && snap.Finished.IsZero()
	byTarget := map[string]int{}
	for _, row := range rows {
		target, err := s.dl.in.Target(row.Entry, to)
		switch {
		case err != nil:
			d.RefusedN++
			if len(d.Refused) < 5 {
				d.Refused = append(d.Refused, err.Error())
			}
		case target == "":
			d.Skipped++
		default:
			d.Would++
			byTarget[target]++
			if len(d.Sample) < 20 {
				d.Sample = append(d.Sample, redriveSample{row, target})
			}
		}
	}
	for q, n := range byTarget {
		d.Targets = append(d.Targets, targetCount{q, n})
	}
	slices.SortFunc(d.Targets, func(a, b targetCount) int { return strings.Compare(a.Queue, b.Queue) })
	d.JobRunning = s.dl.current().running()
	s.render(w, r, status, "dlredrive", page{Title: "Redrive dead letters", Nav: "dead-letters", User: u, Data: d})
}

// redrive starts a redrive after the dry run.
func (s *Server) redrive(w http.ResponseWriter, r *http.Request, u *auth.User) {
	if !s.postForm(w, r, u, 8<<10, func(fm *form) {
		// Every field is sent by the dry run's form: an empty filter
		// selects every letter, and an empty rate is no limit, so none
		// may be missing.
		for _, k := range []string{"type", "source", "error", "id", "rate", "to"} {
			fm.req(k)
		}
		fm.flag("keep", "on")
	}) {
		return
	}
	f, ok := s.dlFilterOr(w, r, u)
	if !ok {
		return
	}
	rate, to, keep, err := redriveForm(r)
	if err != nil {
		s.errorPage(w, r, u, http.StatusUnprocessableEntity, "Not redriven", err.Error())
		return
	}
	settings := fmt.Sprintf("%s; rate %s; attempts reset to 0", describe(f), rateText(rate))
	if keep {
		settings = fmt.Sprintf("%s; rate %s; attempts kept", describe(f), rateText(rate))
	}
	if to != "" {
		settings += "; messages without a source queue of Mill's to " + to
	}
	j := &dlJob{Kind: "redrive", User: u.Name, Filter: describe(f), Rate: rate}
	s.startJob(w, r, u, j, "redrive started: "+settings, func(ctx context.Context, j *dlJob, update func(func(*dlJob))) {
		redriven := map[string]bool{}
		st, err := s.dl.in.Redrive(ctx, deadletter.Redrive{Filter: f, Rate: rate, To: to, KeepAttempts: keep,
			Each:     func(e *deadletter.Entry, _ string) { redriven[e.Message.ID] = true },
			Progress: func(st deadletter.RedriveStats) { update(func(j *dlJob) { j.Redrive = st }) }})
		s.dl.forget(redriven, false)
		update(func(j *dlJob) { j.Redrive, j.Summary, j.Err = st, st.Summary(false), errText(err) })
		s.recordJob(u, "dlq.redrive.result", st.Summary(false)+"; "+settings, err)
	})
}

// startJob runs fn as the dead-letter queue's background job j (unless one
// runs: 409), records that it started, and sends the user to the
// dead-letter page, where its progress shows.
func (s *Server) startJob(w http.ResponseWriter, r *http.Request, u *auth.User, j *dlJob, summary string, fn func(context.Context, *dlJob, func(func(*dlJob)))) {
	if !s.dl.start(j, fn) {
		s.errorPage(w, r, u, http.StatusConflict, "Busy", "A redrive or purge is running; wait until it is done.")
		return
	}
	msg := j.Kind
	if err := s.record(r.Context(), u, changelog.Change{Action: "dlq." + j.Kind, Target: s.dl.in.QueueName(), Summary: summary}); err != nil {
		msg += "&msg=unrecorded"
	}
	http.Redirect(w, r, "/dead-letters?msg="+msg, http.StatusSeeOther)
}

func rateText(rate float64) string {
	if rate == 0 {
		return "unlimited"
	}
	return strconv.FormatFloat(rate, 'f', -1, 64) + "/s"
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// recordJob records a job's outcome in the change log (the user who
// started it).
func (s *Server) recordJob(u *auth.User, action, summary string, err error) {
	c := changelog.Change{Action: action, Target: s.dl.in.QueueName(), Summary: summary}
	if err != nil {
		c.Detail = err.Error()
	}
	_ = s.record(s.bg, u, c)
}

type purgeData struct {
	Filter   deadletter.Filter
	Describe string
	Query    string
	All      bool
	N        int // matching in the snapshot, or the queue's depth
	Snap     *dlSnap
	Partial  bool
	Error    string
}

// purgePage asks for confirmation.
func (s *Server) purgePage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	s.purgeConfirm(w, r, u, http.StatusOK, "")
}

func (s *Server) purgeConfirm(w http.ResponseWriter, r *http.Request, u *auth.User, status int, problem string) {
	f, ok := s.dlFilterOr(w, r, u)
	if !ok {
		return
	}
	d := purgeData{Filter: f, Describe: describe(f), Query: dlQuery(f), All: f.Empty(), Error: problem}
	if d.All {
		dep, err := s.dl.in.Depth(r.Context())
		if err != nil {
			s.fail(w, r, "reading the dead-letter queue's depth", err)
			return
		}
		d.N = int(dep.Total())
	} else {
		s.dl.refresh(false)
		s.dl.view(r.Context(), f, 1, dlFirstPageWait)
		var rows []*dlRow
		rows, d.Snap = s.dl.matching(f)
		d.N, d.Partial = len(rows), d.Snap != nil && d.Snap.Finished.IsZero()
	}
	s.render(w, r, status, "dlpurge", page{Title: "Purge dead letters", Nav: "dead-letters", User: u, Data: d})
}

// purge deletes after confirmation. A filtered purge deletes no more than
// the number the user confirmed: if more match by the time the queue is
// scanned, nothing is deleted.
func (s *Server) purge(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var confirm, exp string
	if !s.postForm(w, r, u, 8<<10, func(fm *form) {
		// An empty filter purges the whole queue: a form that lost its
		// filter fields must not.
		for _, k := range []string{"type", "source", "error", "id"} {
			fm.req(k)
		}
		confirm, exp = fm.req("confirm"), fm.nonEmpty("expected")
	}) {
		return
	}
	f, ok := s.dlFilterOr(w, r, u)
	if !ok {
		return
	}
	if confirm != "purge" {
		s.purgeConfirm(w, r, u, http.StatusUnprocessableEntity, "Type purge to confirm.")
		return
	}
	expected, err := strconv.Atoi(exp)
	if err != nil || expected < 0 {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad request", "The confirmation form is incomplete.")
		return
	}
	what := describe(f)
	if f.Empty() {
		what = "the whole queue (about " + strconv.Itoa(expected) + " messages)"
	}
	j := &dlJob{Kind: "purge", User: u.Name, Filter: what}
	s.startJob(w, r, u, j, fmt.Sprintf("purge started: %s (%d confirmed)", what, expected), func(ctx context.Context, j *dlJob, update func(func(*dlJob))) {
		gone := map[string]bool{}
		res, err := s.dl.in.Purge(ctx, deadletter.Purge{Filter: f,
			Confirm: func(n, looked int) bool { return looked < 0 || n <= expected },
			Each:    func(e *deadletter.Entry) { gone[e.Message.ID] = true }})
		sum := res.Summary(s.dl.in.QueueName())
		if res.Cancelled {
			sum = fmt.Sprintf("nothing deleted: more dead letters match now than the %d confirmed; look again and confirm", expected)
		}
		s.dl.forget(gone, res.All && err == nil && !res.Cancelled)
		update(func(j *dlJob) { j.Purge, j.Summary, j.Err = res, sum, errText(err) })
		s.recordJob(u, "dlq.purge.result", sum+"; "+what, err)
	})
}
