package bitlog

import (
	"errors"

	"github.com/millfleet/mill/internal/base/paging"
)

// Errors of every Log implementation (test with errors.Is).
var (
	// ErrInvalid: a row or report lacks a required field or has an unknown
	// result, or a filter is malformed.
	ErrInvalid = errors.New("bitlog: invalid")
	// ErrBadPageToken: Results (or Checked) was given an After token it did
	// not make. It is paging.ErrBadToken, the error of every listing's page
	// tokens; the bit log's errors wrapping it say "bitlog: bad page token".
	ErrBadPageToken = paging.ErrBadToken
	// ErrNoRun: the bit producer recorded no such space in such a run
	// (Runs.RunSpace).
	ErrNoRun = errors.New("bitlog: no such run")
	// ErrNoAtRestJob: the bit producer recorded no at-rest job for such a
	// space in such a run, or no such object in it (AtRestJobs).
	ErrNoAtRestJob = errors.New("bitlog: no such at-rest job")
)
