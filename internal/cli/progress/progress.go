// Package progress draws a one-line progress bar on a terminal:
//
//	[##########..........]  50/100  12.5/s
//
// Callers decide whether their output is a terminal (and log lines
// otherwise); a Bar only draws.
package progress

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Width is the number of cells of the bar.
const Width = 30

// Bar is a progress bar over Total units, redrawn in place with a carriage
// return. Safe for concurrent use.
type Bar struct {
	w     io.Writer
	total int
	label string
	now   func() time.Time

	mu    sync.Mutex
	done  int
	start time.Time
}

// New returns a bar of total units (0 = unknown: no bar, only the count)
// writing to w.
func New(w io.Writer, label string, total int) *Bar {
	return &Bar{w: w, total: total, label: label, now: time.Now, start: time.Now()}
}

// Add counts n more units done and redraws.
func (b *Bar) Add(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.done += n
	fmt.Fprint(b.w, "\r"+b.line())
}

// Finish draws the final state and ends the line.
func (b *Bar) Finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprint(b.w, "\r"+b.line()+"\n")
}

func (b *Bar) line() string {
	rate := 0.0
	if el := b.now().Sub(b.start).Seconds(); el > 0 {
		rate = float64(b.done) / el
	}
	return Line(b.label, int64(b.done), int64(b.total), fmt.Sprintf("%.1f/s", rate))
}

// Line is one drawing of a bar without its carriage return: the label,
// the bar of done out of total (only the count when total is 0 or less)
// and extra (e.g. a rate), for callers that know their own counts.
func Line(label string, done, total int64, extra string) string {
	if total <= 0 {
		return fmt.Sprintf("%s %d  %s ", label, done, extra)
	}
	filled := int(min(Width, max(done, 0)*Width/total))
	return fmt.Sprintf("%s [%s%s] %d/%d  %s ", label, strings.Repeat("#", filled), strings.Repeat(".", Width-filled), done, total, extra)
}
