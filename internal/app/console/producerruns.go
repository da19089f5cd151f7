package console

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/runs"
)

// The producer runs (Config.Runs, pkg/runs): those in progress on the home
// page with their progress, each with its page of counts and failures.

// homeRuns is how many of the latest runs the home page reads; maxRunFailures
// how many failures a run's page lists.
const (
	homeRuns       = 20
	maxRunFailures = 200
)

// runView is a run as the pages show it.
type runView struct {
	runs.Status
	Settled, Left int64
	State         string
	Rate          string // settled tasks a second, minute or hour
	ETA           string
	Pct           int // percent settled (0 while the total is unknown)
}

func viewRun(st runs.Status, now time.Time) runView {
	v := runView{Status: st, Settled: st.Settled(), Left: st.Left(), Rate: taskRate(st.Rate(now)), ETA: "—"}
	switch {
	case !st.Completed.IsZero():
		v.State = "completed"
	case st.Listed.IsZero():
		v.State = "queueing"
	default:
		v.State = "running"
	}
	if d, ok := st.ETA(now); ok {
		v.ETA = human(d.Round(time.Second))
	}
	if st.Enqueued > 0 {
		v.Pct = int(min(v.Settled*100/st.Enqueued, 100))
	}
	return v
}

// taskRate writes r tasks a second in the unit that shows it best.
func taskRate(r float64) string {
	switch {
	case r <= 0:
		return "—"
	case r >= 1:
		return fmt.Sprintf("%.1f tasks/s", r)
	case r*60 >= 1:
		return fmt.Sprintf("%.1f tasks/min", r*60)
	}
	return fmt.Sprintf("%.1f tasks/h", r*3600)
}

// runsInProgress returns the latest runs not completed, or why they could
// not be read.
func (s *Server) runsInProgress(r *http.Request) ([]runView, string) {
	all, err := s.cfg.Runs.List(r.Context(), homeRuns)
	if err != nil {
		s.cfg.Logger.Warn("console: runs", "err", err)
		return nil, "the producer runs could not be read"
	}
	now := s.cfg.Clock.Now()
	var out []runView
	for _, st := range all {
		if st.Completed.IsZero() {
			out = append(out, viewRun(st, now))
		}
	}
	return out, ""
}

type producerRunData struct {
	Run      runView
	Failures []runs.Outcome
	More     bool // more failures than listed
	Err      string
}

// producerRunPage shows one producer run: its counts, rate, ETA and
// failures (dead-lettered first).
func (s *Server) producerRunPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	if s.cfg.Runs == nil {
		s.errorPage(w, r, u, http.StatusNotFound, "No runs", "This console reads no record of producer runs (it needs --database-url).")
		return
	}
	producer, id := r.PathValue("producer"), r.PathValue("id")
	if (producer != runs.ProducerDup && producer != runs.ProducerBit && producer != runs.ProducerStats) || runs.CheckID(id) != nil {
		s.errorPage(w, r, u, http.StatusNotFound, "No such run", "No producer makes a run of that name.")
		return
	}
	st, err := s.cfg.Runs.Get(r.Context(), producer, id)
	if errors.Is(err, runs.ErrNoRun) {
		s.errorPage(w, r, u, http.StatusNotFound, "No such run", "The record of runs has no such run.")
		return
	}
	if err != nil {
		s.cfg.Logger.Error("console: run", "err", err)
		s.errorPage(w, r, u, http.StatusServiceUnavailable, "Runs unavailable", "The record of runs could not be read.")
		return
	}
	d := producerRunData{Run: viewRun(st, s.cfg.Clock.Now())}
	fails, err := s.cfg.Runs.Failures(r.Context(), producer, id, maxRunFailures+1)
	if err != nil {
		s.cfg.Logger.Warn("console: run failures", "err", err)
		d.Err = "The failures could not be read."
	}
	if len(fails) > maxRunFailures {
		fails, d.More = fails[:maxRunFailures], true
	}
	d.Failures = fails
	s.render(w, r, http.StatusOK, "producerrun", page{Title: "Run " + id + " of " + producer, Nav: "home", User: u, Data: d})
}
