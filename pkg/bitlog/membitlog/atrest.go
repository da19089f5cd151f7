package membitlog

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/millfleet/mill/pkg/bitlog"
)

// The bit producer's record of its at-rest jobs (bitlog.AtRestJobs).

var _ bitlog.AtRestJobs = (*Log)(nil)

type atRest struct {
	job  bitlog.AtRestJob
	objs map[string]bitlog.AtRestObject
}

// AddAtRestObjects implements bitlog.AtRestJobs.
func (m *Log) AddAtRestObjects(ctx context.Context, k bitlog.AtRestKey, objs []bitlog.AtRestObject) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := k.Validate(); err != nil {
		return fmt.Errorf("bitlog: at-rest objects: %w", err)
	}
	for _, o := range objs {
		if err := bitlog.ValidateAtRestObject(k, o); err != nil {
			return fmt.Errorf("bitlog: at-rest objects: %w", err)
		}
	}
	now := bitlog.Truncate(m.clock.Now())
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.atRest == nil {
		m.atRest = map[bitlog.AtRestKey]*atRest{}
	}
	a := m.atRest[k]
	if a == nil {
		a = &atRest{job: bitlog.AtRestJob{AtRestKey: k, State: bitlog.AtRestListing, Updated: now}, objs: map[string]bitlog.AtRestObject{}}
		m.atRest[k] = a
	}
	if a.job.State != bitlog.AtRestListing {
		return fmt.Errorf("bitlog: at-rest objects: %w: job %s is %s, its manifest is closed", bitlog.ErrInvalid, k, a.job.State)
	}
	for _, o := range objs {
		a.objs[o.ContentID] = bitlog.AtRestObject{ContentID: o.ContentID, Size: o.Size, StorageClass: o.StorageClass}
	}
	return nil
}

// SetAtRestJob implements bitlog.AtRestJobs.
func (m *Log) SetAtRestJob(ctx context.Context, j bitlog.AtRestJob) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.atRest[j.AtRestKey]
	if a == nil {
		if err := j.Validate(); err != nil {
			return fmt.Errorf("bitlog: at-rest job: %w", err)
		}
		return fmt.Errorf("%w: %s", bitlog.ErrNoAtRestJob, j.AtRestKey)
	}
	if err := bitlog.CheckAtRestMove(a.job, j); err != nil {
		return fmt.Errorf("bitlog: at-rest job: %w", err)
	}
	if j.Submitted.IsZero() {
		j.Submitted = a.job.Submitted
	} else {
		j.Submitted = bitlog.Truncate(j.Submitted)
	}
	j.Updated = bitlog.Truncate(cmp.Or(j.Updated, m.clock.Now()))
	a.job = j
	return nil
}

// RecordAtRestResults implements bitlog.AtRestJobs.
func (m *Log) RecordAtRestResults(ctx context.Context, k bitlog.AtRestKey, results []bitlog.AtRestObject) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.atRest[k]
	if a == nil {
		return 0, fmt.Errorf("%w: %s", bitlog.ErrNoAtRestJob, k)
	}
	n := 0
	for _, r := range results {
		o, ok := a.objs[r.ContentID]
		if !ok {
			continue
		}
		o.Reported, o.OK, o.Checksum, o.Error = true, r.OK, r.Checksum, r.Error
		a.objs[r.ContentID] = o
		n++
	}
	return n, nil
}

// AtRestJob implements bitlog.AtRestJobs.
func (m *Log) AtRestJob(ctx context.Context, k bitlog.AtRestKey) (bitlog.AtRestJob, error) {
	if err := ctx.Err(); err != nil {
		return bitlog.AtRestJob{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.atRest[k]
	if a == nil {
		return bitlog.AtRestJob{}, fmt.Errorf("%w: %s", bitlog.ErrNoAtRestJob, k)
	}
	return a.job, nil
}

// AtRestObject implements bitlog.AtRestJobs.
func (m *Log) AtRestObject(ctx context.Context, k bitlog.AtRestKey, contentID string) (bitlog.AtRestObject, error) {
	if err := ctx.Err(); err != nil {
		return bitlog.AtRestObject{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if a := m.atRest[k]; a != nil {
		if o, ok := a.objs[contentID]; ok {
			return o, nil
		}
	}
	return bitlog.AtRestObject{}, fmt.Errorf("%w: object %q of %s", bitlog.ErrNoAtRestJob, contentID, k)
}

// AtRestObjects implements bitlog.AtRestJobs.
func (m *Log) AtRestObjects(ctx context.Context, k bitlog.AtRestKey, after string, limit int) ([]bitlog.AtRestObject, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	limit = bitlog.PageSize(limit)
	m.mu.Lock()
	defer m.mu.Unlock()
	a := m.atRest[k]
	if a == nil {
		return nil, false, fmt.Errorf("%w: %s", bitlog.ErrNoAtRestJob, k)
	}
	var out []bitlog.AtRestObject
	for id, o := range a.objs {
		if id > after {
			out = append(out, o)
		}
	}
	slices.SortFunc(out, func(a, b bitlog.AtRestObject) int { return cmp.Compare(a.ContentID, b.ContentID) })
	if len(out) > limit {
		return out[:limit], true, nil
	}
	return out, false, nil
}

// OpenAtRestJobs implements bitlog.AtRestJobs.
func (m *Log) OpenAtRestJobs(ctx context.Context) ([]bitlog.AtRestJob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []bitlog.AtRestJob
	for _, a := range m.atRest {
		if a.job.State.Open() {
			out = append(out, a.job)
		}
	}
	slices.SortFunc(out, func(a, b bitlog.AtRestJob) int {
		return cmp.Or(a.Submitted.Compare(b.Submitted), cmp.Compare(a.AtRestKey.String(), b.AtRestKey.String()))
	})
	return out, nil
}
