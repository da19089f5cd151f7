package console

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
)

// sampler reads the queues every interval and keeps the depth history of
// the last window for the charts: the console's own sampling, so the
// charts work on any emulator and in the dev mode, and cost no CloudWatch
// requests. The history starts when the console starts; each console
// instance keeps its own. Reads for the pages share one cached read for
// fresh, so many open pages cost what one does.
type sampler struct {
	reader               *queuestats.Reader
	clock                clock.Clock
	every, window, fresh time.Duration
	log                  *slog.Logger

	mu     sync.Mutex
	last   []queuestats.Row
	lastAt time.Time
	hist   map[string][]sample
}

type sample struct {
	at    time.Time
	total int64
	ok    bool
}

func newSampler(r *queuestats.Reader, c clock.Clock, every, window, refresh time.Duration, log *slog.Logger) *sampler {
	fresh := refresh - refresh/4
	return &sampler{reader: r, clock: c, every: every, window: window, fresh: fresh, log: log, hist: map[string][]sample{}}
}

// rows returns the queues' depths, read at most once per fresh.
func (s *sampler) rows(ctx context.Context) ([]queuestats.Row, time.Time, error) {
	s.mu.Lock()
	if s.last != nil && s.clock.Now().Sub(s.lastAt) < s.fresh {
		rows, at := s.last, s.lastAt
		s.mu.Unlock()
		return rows, at, nil
	}
	s.mu.Unlock()
	return s.read(ctx)
}

// read reads the queues and records a sample.
func (s *sampler) read(ctx context.Context) ([]queuestats.Row, time.Time, error) {
	rows, err := s.reader.Read(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last, s.lastAt = rows, now
	for _, r := range rows {
		h := s.hist[r.Key]
		// One sample per interval: a page read between two ticks replaces
		// the newest sample rather than crowding the chart.
		if n := len(h); n > 0 && now.Sub(h[n-1].at) < s.every/2 {
			h = h[:n-1]
		}
		h = append(h, sample{at: now, total: r.Total(), ok: r.Error == ""})
		cut := 0
		for cut < len(h) && now.Sub(h[cut].at) > s.window {
			cut++
		}
		s.hist[r.Key] = h[cut:]
	}
	return rows, now, nil
}

// run samples every interval until ctx ends.
func (s *sampler) run(ctx context.Context) {
	for {
		if _, _, err := s.read(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("console: sampling the queues", "err", err)
		}
		if err := clock.Sleep(ctx, s.clock, s.every); err != nil {
			return
		}
	}
}

// history returns the samples of a queue, oldest first.
func (s *sampler) history(key string) []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.hist[key]...)
}

// Chart geometry (SVG user units).
const (
	chartW = 240
	chartH = 40
)

// chart is a depth chart drawn as SVG by the template: a polyline and the
// area under it. No script, no inline style: the stylesheet colours it.
type chart struct {
	Line, Area string // SVG points
	Max        int64
	Samples    int
	Label      string
	W, H       int
}

// makeChart scales the samples of the window ending at now into the
// chart's box.
func makeChart(h []sample, now time.Time, window time.Duration) chart {
	c := chart{W: chartW, H: chartH, Samples: len(h)}
	for _, p := range h {
		c.Max = max(c.Max, p.total)
	}
	scale := float64(max(c.Max, 1))
	var pts []string
	for _, p := range h {
		x := float64(chartW) * (1 - float64(now.Sub(p.at))/float64(window))
		y := float64(chartH-2) - float64(chartH-4)*float64(p.total)/scale
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", max(x, 0), y))
	}
	c.Line = strings.Join(pts, " ")
	if len(pts) > 0 {
		first := strings.Split(pts[0], ",")[0]
		last := strings.Split(pts[len(pts)-1], ",")[0]
		c.Area = fmt.Sprintf("%s,%d %s %s,%d", first, chartH, c.Line, last, chartH)
	}
	c.Label = fmt.Sprintf("messages over the last %s: %d samples, at most %d", window, len(h), c.Max)
	return c
}

// queueRow is one row of the queues page.
type queueRow struct {
	queuestats.Row
	Age      string
	Chart    chart
	Priority int // 1..6; 0 for the dead-letter queue
}

type queuesData struct {
	Rows        []queueRow
	ReadAt      time.Time
	Now         time.Time
	Window      time.Duration
	SampleEvery time.Duration
	Total       int64
	Error       string
}

func (s *Server) queueRoutes(route routeFunc) {
	route("GET /queues", auth.RoleViewer, s.queuesPage)
}

func (s *Server) queuesPage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	d := s.queuesData(r.Context())
	s.render(w, r, http.StatusOK, "queues", page{Title: "Queues", Nav: "queues", User: u, Data: d})
}

func (s *Server) queuesData(ctx context.Context) queuesData {
	d := queuesData{Window: s.cfg.HistoryWindow, SampleEvery: s.cfg.SampleEvery, Now: s.cfg.Clock.Now()}
	rows, at, err := s.samples.rows(ctx)
	if err != nil {
		d.Error = err.Error()
		return d
	}
	d.ReadAt = at
	for _, row := range rows {
		qr := queueRow{Row: row, Age: "—", Chart: makeChart(s.samples.history(row.Key), d.Now, s.cfg.HistoryWindow)}
		for i, k := range queue.DefaultPriority {
			if k == row.Key {
				qr.Priority = i + 1
			}
		}
		if row.OldestAgeSeconds != nil {
			qr.Age = (time.Duration(*row.OldestAgeSeconds) * time.Second).String()
		}
		d.Total += row.Total()
		d.Rows = append(d.Rows, qr)
	}
	return d
}
