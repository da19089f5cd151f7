package console

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/spacestats"
)

type statsData struct {
	Level                     spacestats.Level
	Levels                    []spacestats.Level
	Account, Store, Space     string
	Groups                    []spacestats.Group
	Total                     spacestats.Group
	History                   []spacestats.Total
	ItemsChart, BytesChart    historyChart
	CSV, HistoryCSV, ThisPage string
}

// statsQuery reads the statistics page's selection, as millctl stats
// takes it: --by, --account, --store, --space.
func statsQuery(r *http.Request) (spacestats.Level, spacestats.Filter, error) {
	q := r.URL.Query()
	by := q.Get("by")
	if by == "" {
		by = string(spacestats.ByAccount)
	}
	level, err := spacestats.ParseLevel(by)
	if err != nil {
		return "", spacestats.Filter{}, fmt.Errorf("by: want account, store or space")
	}
	f := spacestats.Filter{Account: q.Get("account"), StoreID: q.Get("store"), SpaceID: q.Get("space")}
	if f.StoreID != "" && f.Account == "" || f.SpaceID != "" && f.StoreID == "" {
		return "", f, fmt.Errorf("a store needs its account, a space its store")
	}
	return level, f, nil
}

func (s *Server) statsRoutes(route routeFunc) {
	route("GET /statistics", auth.RoleViewer, s.statsPage)
	route("GET /statistics.csv", auth.RoleViewer, s.statsCSV)
}

func (s *Server) statsPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	level, f, err := statsQuery(r)
	if err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad selection", err.Error())
		return
	}
	ctx := r.Context()
	rows, err := s.cfg.Stats.Latest(ctx, f)
	if err != nil {
		s.fail(w, r, "reading the statistics", err)
		return
	}
	hist, err := s.cfg.Stats.History(ctx, f, time.Time{}, spacestats.DefaultHistory)
	if err != nil {
		s.fail(w, r, "reading the statistics history", err)
		return
	}
	d := statsData{Level: level, Levels: []spacestats.Level{spacestats.ByAccount, spacestats.ByStore, spacestats.BySpace},
		Account: f.Account, Store: f.StoreID, Space: f.SpaceID, Groups: spacestats.Groups(rows, level), History: hist}
	for _, g := range d.Groups {
		d.Total.Spaces += g.Spaces
		d.Total.Items += g.Items
		d.Total.Bytes += g.Bytes
	}
	d.ItemsChart = lineChart(hist, func(t spacestats.Total) int64 { return t.Items }, "items", strconv.FormatInt)
	d.BytesChart = lineChart(hist, func(t spacestats.Total) int64 { return t.Bytes }, "bytes", func(n int64, _ int) string { return spacestats.FormatBytes(n) })
	d.CSV, _ = urlQuery("/statistics.csv", "by", string(level), "account", f.Account, "store", f.StoreID, "space", f.SpaceID)
	d.HistoryCSV, _ = urlQuery("/statistics.csv", "history", "1", "account", f.Account, "store", f.StoreID, "space", f.SpaceID)
	s.render(w, r, http.StatusOK, "statistics", page{Title: "Statistics", Nav: "statistics", User: u, Data: d})
}

// statsCSV is the page's table (or, with history=1, its history) as CSV,
// the columns of millctl stats --json.
func (s *Server) statsCSV(w http.ResponseWriter, r *http.Request, u *auth.User) {
	level, f, err := statsQuery(r)
	if err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad selection", err.Error())
		return
	}
	var recs [][]string
	name := "mill-statistics-" + string(level) + ".csv"
	if r.URL.Query().Get("history") == "1" {
		name = "mill-statistics-history.csv"
		hist, err := s.cfg.Stats.History(r.Context(), f, time.Time{}, spacestats.MaxHistory)
		if err != nil {
			s.fail(w, r, "reading the statistics history", err)
			return
		}
		recs = append(recs, []string{"run_id", "measured", "spaces", "items", "bytes"})
		for _, t := range hist {
			recs = append(recs, []string{t.RunID, t.Measured.UTC().Format(time.RFC3339), itoa(t.Spaces), itoa(t.Items), itoa(t.Bytes)})
		}
	} else {
		rows, err := s.cfg.Stats.Latest(r.Context(), f)
		if err != nil {
			s.fail(w, r, "reading the statistics", err)
			return
		}
		recs = append(recs, []string{"account", "store", "space", "spaces", "items", "bytes", "run_id", "measured"})
		for _, g := range spacestats.Groups(rows, level) {
			recs = append(recs, []string{g.Account, g.StoreID, g.SpaceID, itoa(g.Spaces), itoa(g.Items), itoa(g.Bytes), g.RunID, g.Measured.UTC().Format(time.RFC3339)})
		}
	}
	for _, rec := range recs { // a spreadsheet must not read a name as a formula
		for i, v := range rec {
			if v != "" && strings.ContainsRune("=+-@\t\r", rune(v[0])) {
				rec[i] = "'" + v
			}
		}
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
	cw := csv.NewWriter(w)
	_ = cw.WriteAll(recs)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// historyChart is a line chart drawn on the server as SVG path data (no
// script, no inline style): the history oldest first, scaled into a
// histW×histH box.
type historyChart struct {
	Path, Area string
	Points     []chartPoint
	Max, Min   string
	From, To   string
	Label      string
}

type chartPoint struct {
	X, Y  float64
	Title string
}

const histW, histH = 600.0, 160.0

func lineChart(hist []spacestats.Total, val func(spacestats.Total) int64, label string, format func(int64, int) string) historyChart {
	c := historyChart{Label: label}
	if len(hist) == 0 {
		return c
	}
	var lo, hi int64 = val(hist[0]), val(hist[0])
	for _, t := range hist {
		lo, hi = min(lo, val(t)), max(hi, val(t))
	}
	span := float64(hi - lo)
	if span == 0 {
		span = 1
	}
	var path strings.Builder
	n := len(hist)
	for i := range hist {
		t := hist[n-1-i] // History is newest first
		x := histW / 2
		if n > 1 {
			x = float64(i) * histW / float64(n-1)
		}
		y := histH - 8 - (float64(val(t)-lo)/span)*(histH-16)
		if i == 0 {
			fmt.Fprintf(&path, "M%.1f %.1f", x, y)
		} else {
			fmt.Fprintf(&path, " L%.1f %.1f", x, y)
		}
		c.Points = append(c.Points, chartPoint{X: x, Y: y, Title: t.RunID + ": " + format(val(t), 10) + " " + label})
	}
	c.Path = path.String()
	c.Area = c.Path + fmt.Sprintf(" L%.1f %.1f L%.1f %.1f Z", c.Points[n-1].X, histH, c.Points[0].X, histH)
	c.Max, c.Min = format(hi, 10), format(lo, 10)
	c.From, c.To = hist[n-1].Measured.UTC().Format("2006-01-02"), hist[0].Measured.UTC().Format("2006-01-02")
	return c
}
