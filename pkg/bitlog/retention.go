package bitlog

import (
	"context"
	"regexp"
	"strconv"
	"time"
)

// DefaultRetentionMonths is how many months of bit log history are kept by
// default: the current month and the twelve before it, so this month's
// results can be compared with those of a year ago.
const DefaultRetentionMonths = 13

// runIDForm is the form of a bitproducer run ID: the run's start in UTC,
// "20060102T150405Z" (year 1000 or later, month 01–12).
var runIDForm = regexp.MustCompile(`^[1-9][0-9]{3}(0[1-9]|1[0-2])[0-9]{2}T[0-9]{6}Z$`)

// RunMonth returns the month of a bitproducer run ID (its first instant,
// UTC) and true, or false when runID is not in the producer's form
// ("20060102T150405Z"; only the year and month are read).
func RunMonth(runID string) (time.Time, bool) {
	if !runIDForm.MatchString(runID) {
		return time.Time{}, false
	}
	y, _ := strconv.Atoi(runID[:4])
	m, _ := strconv.Atoi(runID[4:6])
	return time.Date(y, time.Month(m), 1, 0, 0, 0, 0, time.UTC), true
}

// MonthOf returns the first instant (UTC) of t's month.
func MonthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Month returns the month a row belongs to, which decides how long it is
// kept: its run's month when RunID is a bitproducer run ID, so a run's rows
// stay together whenever they are recorded; otherwise (a check outside any
// run) the month of at, the time the row is recorded (its row moves to
// the month of its latest check).
func Month(runID string, at time.Time) time.Time {
	if m, ok := RunMonth(runID); ok {
		return m
	}
	return MonthOf(at)
}

// Cutoff returns the first month kept when keep months of history are kept
// at now: months starting before it are expired. keep < 1 is taken as 1
// (the current month).
func Cutoff(now time.Time, keep int) time.Time {
	return MonthOf(now).AddDate(0, -(max(keep, 1) - 1), 0)
}

// MonthInfo is one month of bit log history.
type MonthInfo struct {
	Month time.Time // first instant, UTC
	// Rows is the number of rows, or PostgreSQL's estimate of it; -1 when
	// unknown (a partition not analysed yet).
	Rows int64
}

// Pruner drops whole months of history; pgbitlog.Log (a partition per
// month: a dropped month is a dropped partition, whatever its size) and
// membitlog.Log implement it.
//
//   - Months returns the months that hold history, oldest first.
//   - DropMonths deletes every row of the months starting before `before`
//     and returns those months (with their rows as Months counted them);
//     the at-rest jobs (AtRestJobs) of runs of those months go with them.
type Pruner interface {
	Months(ctx context.Context) ([]MonthInfo, error)
	DropMonths(ctx context.Context, before time.Time) ([]MonthInfo, error)
}
