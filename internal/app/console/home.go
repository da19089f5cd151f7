package console

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/ops/alarms"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/stores"
)

// AlarmLister lists Mill's alarms that are in ALARM (CloudWatchAlarms).
type AlarmLister interface {
	InAlarm(ctx context.Context) ([]Alarm, error)
}

// Alarm is one alarm in ALARM.
type Alarm struct {
	Name, Reason string
	Since        time.Time
}

// CloudWatchAlarms lists the alarms internal/ops/alarms defines for the
// queue prefix (alarms.Specs) that CloudWatch has in ALARM: one
// DescribeAlarms by name and state.
type CloudWatchAlarms struct {
	Client alarms.API
	Prefix string
}

// InAlarm implements AlarmLister.
func (c CloudWatchAlarms) InAlarm(ctx context.Context) ([]Alarm, error) {
	var names []string
	for _, sp := range alarms.Specs(alarms.DefaultConfig(c.Prefix)) {
		names = append(names, sp.Name)
	}
	var out []Alarm
	for chunk := range slices.Chunk(names, 100) { // DescribeAlarms takes at most 100 names
		in := &cloudwatch.DescribeAlarmsInput{AlarmNames: chunk, StateValue: cwtypes.StateValueAlarm,
			AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm}}
		for {
			res, err := c.Client.DescribeAlarms(ctx, in)
			if err != nil {
				return nil, fmt.Errorf("console: CloudWatch alarms: %w", err)
			}
			for _, a := range res.MetricAlarms {
				if a.StateValue != cwtypes.StateValueAlarm { // the emulator does not apply StateValue with AlarmNames
					continue
				}
				out = append(out, Alarm{Name: aws.ToString(a.AlarmName), Reason: aws.ToString(a.StateReason), Since: aws.ToTime(a.StateUpdatedTimestamp)})
			}
			if aws.ToString(res.NextToken) == "" {
				break
			}
			in.NextToken = res.NextToken
		}
	}
	return out, nil
}

// figure is one number of the home page with the page that details it.
type figure struct {
	ID, Label, Link string
	N               int64
	Bad             bool
	Missing         string // why there is no figure
}

type homeData struct {
	At         time.Time
	Safe       bool
	Problems   []string
	Figures    []figure
	Coverage   *coverageSnap
	Alarms     []Alarm
	AlarmErr   string
	AlarmsOn   bool
	CoverageOn bool
	RunsOn     bool
	Runs       []runView // the producer runs in progress
	RunsErr    string
}

// coverageSnap is the fixity coverage of every space the statistics know,
// rolled up per store (fixity.Totals).
type coverageSnap struct {
	Stores []fixity.Coverage
	At     time.Time
	Err    string
}

// coverageCache computes the fixity coverage in the background — it reads
// every row of the content index and the verdicts — at most every
// coverageEvery, when the home page is viewed; the page shows the last.
type coverageCache struct {
	mu      sync.Mutex
	last    *coverageSnap
	running bool
}

const coverageEvery = 10 * time.Minute

func (s *Server) coverage() *coverageSnap {
	c := &s.cov
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.cfg.Index == nil || s.cfg.Stats == nil || s.cfg.BitLog == nil {
		return nil
	}
	if !c.running && (c.last == nil || s.cfg.Clock.Now().Sub(c.last.At) >= coverageEvery) {
		c.running = true
		go func() {
			snap := s.computeCoverage(s.bg)
			c.mu.Lock()
			c.last, c.running = snap, false
			c.mu.Unlock()
		}()
	}
	return c.last
}

func (s *Server) computeCoverage(ctx context.Context) *coverageSnap {
	snap := &coverageSnap{At: s.cfg.Clock.Now()}
	reg, err := s.editor.Registry(ctx)
	if err != nil {
		snap.Err = "the registry could not be read"
		s.cfg.Logger.Error("console: coverage: registry", "err", err)
		return snap
	}
	latest, err := s.cfg.Stats.Latest(ctx, spacestats.Filter{})
	if err != nil {
		snap.Err = "the storage statistics could not be read"
		s.cfg.Logger.Error("console: coverage: spaces", "err", err)
		return snap
	}
	var spaces []fixity.Space
	for _, st := range latest {
		if _, err := reg.Store(st.Account, st.StoreID); err == nil {
			spaces = append(spaces, fixity.Space{Account: st.Account, StoreID: st.StoreID, SpaceID: st.SpaceID})
		}
	}
	src := fixity.Source{Index: s.cfg.Index, Verdicts: s.cfg.BitLog, Clock: s.cfg.Clock}
	covs, err := src.Spaces(ctx, spaces, func(account, storeID string) stores.Fixity {
		st, err := reg.Store(account, storeID)
		if err != nil {
			return stores.Store{}.FixityTarget()
		}
		return fixity.StoreTarget(*st)
	})
	if err != nil {
		snap.Err = "the coverage could not be measured"
		s.cfg.Logger.Error("console: coverage", "err", err)
		return snap
	}
	snap.Stores = fixity.Totals(covs)
	return snap
}

func (s *Server) homePage(w http.ResponseWriter, r *http.Request, u *auth.User) {
	ctx := r.Context()
	now := s.cfg.Clock.Now()
	d := homeData{At: now}
	bad := func(f figure, problem string) {
		if f.Bad {
			d.Problems = append(d.Problems, problem)
		}
		d.Figures = append(d.Figures, f)
	}
	// Fixity coverage.
	d.CoverageOn = s.cfg.Index != nil && s.cfg.Stats != nil && s.cfg.BitLog != nil
	if c := s.coverage(); c != nil {
		d.Coverage = c
		var overdue int64
		for _, st := range c.Stores {
			overdue += st.Overdue + st.NotCovered
		}
		if c.Err != "" {
			d.Problems = append(d.Problems, "fixity coverage: "+c.Err)
		} else {
			bad(figure{ID: "overdue", Label: "copies overdue for a fixity check", Link: "/bit", N: overdue, Bad: overdue > 0},
				plural(overdue, "copy is not verified within its target", "copies are not verified within their target"))
		}
	} else if !d.CoverageOn {
		d.Figures = append(d.Figures, figure{ID: "overdue", Label: "copies overdue for a fixity check", Link: "/bit",
			Missing: "needs the database (content index, statistics and bit log)"})
	}
	// Open bit-integrity failures and errors: those of each space's
	// latest report.
	if s.cfg.BitLog != nil {
		reps, err := s.cfg.BitLog.Reports(ctx, bitlog.ReportFilter{Limit: bitlog.MaxPageSize})
		if err != nil {
			s.cfg.Logger.Warn("console: home: bit log", "err", err)
			d.Problems = append(d.Problems, "the bit log could not be read")
		}
		seen := map[string]bool{}
		var fails, errs int64
		for _, rep := range reps { // newest first
			k := rep.Account + "\x00" + rep.StoreID + "\x00" + rep.SpaceID
			if seen[k] {
				continue
			}
			seen[k] = true
			fails += rep.Counts.Failure
			errs += rep.Counts.Error
		}
		bad(figure{ID: "failures", Label: "bit-integrity failures", Link: "/bit/results?result=FAILURE", N: fails, Bad: fails > 0},
			plural(fails, "bit-integrity failure is open", "bit-integrity failures are open"))
		bad(figure{ID: "errors", Label: "bit-integrity errors", Link: "/bit/results?result=ERROR", N: errs, Bad: errs > 0},
			plural(errs, "bit-integrity error is open", "bit-integrity errors are open"))
	} else {
		d.Figures = append(d.Figures, figure{ID: "failures", Label: "bit-integrity failures", Link: "/bit", Missing: "needs the database"})
	}
	// Dead letters: the queue's depth.
	dead := figure{ID: "dead-letters", Label: "dead letters", Link: "/dead-letters"}
	if rows, _, err := s.samples.rows(ctx); err != nil {
		dead.Missing = "the queues could not be read"
	} else {
		for _, row := range rows {
			if row.Key == queue.KeyDeadLetter {
				if row.Error != "" {
					dead.Missing = "the dead-letter queue could not be read"
				}
				dead.N = row.Total()
			}
		}
	}
	dead.Bad = dead.N > 0 || dead.Missing != ""
	bad(dead, plural(dead.N, "dead letter waits", "dead letters wait"))
	// The fleet.
	if s.cfg.Fleet != nil {
		snap, err := fleet.Read(ctx, s.cfg.Fleet, now)
		if err != nil {
			d.Problems = append(d.Problems, "the fleet registry could not be read")
		}
		running, lost := int64(snap.Totals[fleet.StateRunning]), int64(snap.Totals[fleet.StateLost])
		d.Figures = append(d.Figures, figure{ID: "running", Label: "workers running", Link: "/fleet", N: running})
		bad(figure{ID: "lost", Label: "workers lost", Link: "/fleet", N: lost, Bad: lost > 0}, plural(lost, "worker is lost", "workers are lost"))
		paused := int64(len(snap.Pauses))
		bad(figure{ID: "paused", Label: "pauses in force", Link: "/fleet#pauses", N: paused, Bad: paused > 0}, plural(paused, "pause is in force", "pauses are in force"))
	} else {
		d.Figures = append(d.Figures, figure{ID: "running", Label: "workers", Link: "/fleet", Missing: "no fleet registry"})
	}
	// Alarms.
	if s.cfg.Alarms != nil {
		d.AlarmsOn = true
		as, err := s.cfg.Alarms.InAlarm(ctx)
		if err != nil {
			s.cfg.Logger.Warn("console: alarms", "err", err)
			d.AlarmErr = "CloudWatch could not be read"
			d.Problems = append(d.Problems, "the alarms could not be read")
		}
		d.Alarms = as
		if len(as) > 0 {
			d.Problems = append(d.Problems, plural(int64(len(as)), "alarm is in ALARM", "alarms are in ALARM"))
		}
	}
	if s.cfg.Runs != nil {
		d.RunsOn = true
		if d.Runs, d.RunsErr = s.runsInProgress(r); d.RunsErr != "" {
			d.Problems = append(d.Problems, d.RunsErr)
		}
	}
	d.Safe = len(d.Problems) == 0
	s.render(w, r, http.StatusOK, "home", page{Title: "Home", Nav: "home", User: u, Data: d})
}

// plural writes n and the phrase for one or for several.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
