package looping

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/millfleet/mill/pkg/clock"
)

// ProgressMode selects how a Loop shows progress.
type ProgressMode int

// Progress modes.
const (
	// ProgressAuto draws a bar when ProgressOutput is a terminal and logs
	// periodic lines otherwise.
	ProgressAuto ProgressMode = iota
	// ProgressBar always draws the bar on ProgressOutput.
	ProgressBar
	// ProgressLog always logs periodic lines.
	ProgressLog
	// ProgressOff shows nothing between the start and the summary.
	ProgressOff
)

type progress interface {
	update(s *Summary, morselsDone int)
	finish()
}

func newProgress(c Config, s *Summary, total, done int) progress {
	mode := c.Progress
	out := c.ProgressOutput
	if out == nil {
		out = os.Stderr
	}
	if mode == ProgressAuto {
		mode = ProgressLog
		if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			mode = ProgressBar
		}
	}
	switch mode {
	case ProgressBar:
		b := &bar{w: out, total: total, kind: c.Kind}
		b.update(s, done)
		return b
	case ProgressLog:
		return &logProgress{log: c.Logger.With("producer", c.Kind), clk: c.Clock, every: c.ProgressInterval,
			last: c.Clock.Now(), total: total}
	default:
		return noProgress{}
	}
}

type noProgress struct{}

func (noProgress) update(*Summary, int) {}
func (noProgress) finish()              {}

// logProgress logs one line per interval (checked after each bite).
type logProgress struct {
	log   *slog.Logger
	clk   clock.Clock
	every time.Duration
	last  time.Time
	total int
}

func (p *logProgress) update(s *Summary, done int) {
	now := p.clk.Now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	p.log.Info("producer progress", "run_id", s.RunID, "bites", s.Bites, "tasks", s.Queued.Total(),
		"morsels_done", done, "morsels_total", p.total)
}

func (p *logProgress) finish() {}

// bar redraws one terminal line after each bite.
type bar struct {
	w     io.Writer
	kind  string
	total int
	drawn bool
}

const barWidth = 30

func (b *bar) update(s *Summary, done int) {
	filled := barWidth
	if b.total > 0 {
		filled = done * barWidth / b.total
	}
	fmt.Fprintf(b.w, "\r%s [%s%s] %d/%d morsels  %d tasks  %d bites ", b.kind,
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), done, b.total, s.Queued.Total(), s.Bites)
	b.drawn = true
}

func (b *bar) finish() {
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}
