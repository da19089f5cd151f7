package console

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/fleet"
)

func (s *Server) fleetRoutes(route routeFunc) {
	route("GET /fleet", auth.RoleViewer, s.fleetPage)
	route("POST /fleet/pause", auth.RoleOperator, s.pause)
	route("POST /fleet/resume", auth.RoleOperator, s.resume)
}

// fleetRow is one worker on the fleet page.
type fleetRow struct {
	fleet.Worker
	Up, Beat, Queues, Running string
	Totals                    fleet.Counts
}

type stateCount struct {
	State fleet.State
	N     int
}

type fleetData struct {
	At      time.Time
	Rows    []fleetRow
	Hidden  int // gone workers not shown
	All     bool
	Totals  []stateCount
	Pauses  []fleet.Pause
	Targets []fleet.Pause // what can be paused and is not
	Error   string
}

var fleetNotices = map[string]string{
	"paused":     "Paused. Every Workman stops it within one heartbeat interval (30 s by default).",
	"resumed":    "Resumed. Every Workman takes it up again within one heartbeat interval.",
	"notpaused":  "That was not paused.",
	"unrecorded": unrecordedNotice,
}

func (s *Server) fleetPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	if a := r.FormValue("all"); a != "" && a != "1" {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad request", "all: want 1 or nothing.")
		return
	}
	now := s.cfg.Clock.Now()
	d := fleetData{At: now, All: r.FormValue("all") == "1"}
	snap, err := fleet.Read(r.Context(), s.cfg.Fleet, now)
	if err != nil {
		d.Error = err.Error()
	}
	prefix := s.cfg.Queues.Prefix()
	for _, wk := range snap.Workers {
		if wk.State == fleet.StateGone && !d.All {
			d.Hidden++
			continue
		}
		row := fleetRow{Worker: wk, Up: "—", Beat: ago(now, wk.Heartbeat), Totals: wk.Total()}
		if !wk.Started.IsZero() {
			row.Up = human(now.Sub(wk.Started).Round(time.Second))
		}
		var qs, running []string
		for _, q := range wk.Queues {
			qs = append(qs, strings.TrimPrefix(q, prefix))
		}
		for _, t := range slices.Sorted(maps.Keys(wk.Running)) {
			running = append(running, t+" "+strconv.Itoa(wk.Running[t]))
		}
		row.Queues, row.Running = strings.Join(qs, ", "), strings.Join(running, ", ")
		d.Rows = append(d.Rows, row)
	}
	for _, st := range fleet.States {
		d.Totals = append(d.Totals, stateCount{st, snap.Totals[st]})
	}
	d.Pauses = snap.Pauses
	for _, t := range fleet.Targets(prefix) {
		if !slices.ContainsFunc(d.Pauses, func(p fleet.Pause) bool { return p.Key() == t.Key() }) {
			d.Targets = append(d.Targets, t)
		}
	}
	msg := ""
	if t, ok := fleetNotices[r.FormValue("msg")]; ok {
		msg = t
	}
	s.render(w, r, http.StatusOK, "fleet", page{Title: "Fleet", Nav: "fleet", User: u, Msg: msg, Data: d})
}

// pause pauses one of fleet.Targets fleet-wide, as millctl pause does.
func (s *Server) pause(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var key, reason string
	if !s.postForm(w, r, u, 4<<10, func(f *form) {
		key, reason = f.nonEmpty("target"), strings.TrimSpace(f.req("reason"))
	}) {
		return
	}
	i := slices.IndexFunc(fleet.Targets(s.cfg.Queues.Prefix()), func(p fleet.Pause) bool { return p.Key() == key })
	if i < 0 || len(reason) > 200 {
		s.errorPage(w, r, u, http.StatusBadRequest, "Not paused", "Choose a task type or a work queue from the list; a reason has at most 200 characters.")
		return
	}
	p := fleet.Targets(s.cfg.Queues.Prefix())[i]
	p.By, p.At, p.Reason = u.Name, s.cfg.Clock.Now(), reason
	if err := s.cfg.Fleet.Pause(r.Context(), p); err != nil {
		s.fail(w, r, "pausing "+p.Key(), err)
		return
	}
	msg := "paused"
	if err := s.record(r.Context(), u, changelog.Change{Action: "fleet.pause", Target: p.Key(), Summary: "paused " + p.String()}); err != nil {
		msg = "unrecorded"
	}
	http.Redirect(w, r, "/fleet?msg="+msg, http.StatusSeeOther)
}

// resume lifts a pause in force, as millctl resume does.
func (s *Server) resume(w http.ResponseWriter, r *http.Request, u *auth.User) {
	var target string
	if !s.postForm(w, r, u, 4<<10, func(f *form) { target = f.nonEmpty("target") }) {
		return
	}
	kind, name, _ := strings.Cut(target, ":")
	if (kind != string(fleet.PauseType) && kind != string(fleet.PauseQueue)) || name == "" || len(name) > 256 {
		s.errorPage(w, r, u, http.StatusBadRequest, "Not resumed", "That is not a pause.")
		return
	}
	ok, err := s.cfg.Fleet.Resume(r.Context(), fleet.PauseKind(kind), name)
	if err != nil {
		s.fail(w, r, "resuming "+kind+" "+name, err)
		return
	}
	msg := "notpaused"
	if ok {
		msg = "resumed"
		if err := s.record(r.Context(), u, changelog.Change{Action: "fleet.resume", Target: kind + ":" + name, Summary: "resumed " + kind + " " + name}); err != nil {
			msg = "unrecorded"
		}
	}
	http.Redirect(w, r, "/fleet?msg="+msg, http.StatusSeeOther)
}
