package bit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/atrest"
	"github.com/millfleet/mill/pkg/atrest/s3batch"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
)

// Cold copies checked at rest (docs/ARCHITECTURE.md, Cold storage). In a
// store whose archived method is compute-checksum, the items the listing
// shows in an archival class (GLACIER, DEEP_ARCHIVE) get no BIT task from
// the bite that lists them: they are recorded as the objects of the
// space's at-rest job of the run (bitlog.AtRestJobs), and the bite that
// ends the listing creates that one job (atrest.Checker.Submit: the
// manifest, MD5 full-object, a token derived from the run and the space,
// so a repeated bite never makes a second job) and records its ID before
// it records the listing's count — which counts the archived items too,
// so the report waits for them. Follow (every invocation) describes the
// recorded jobs that are not finished: a complete job's completion report
// is stored object by object, then one BIT task naming the job is queued
// per object; a failed or cancelled job gets an ERROR row per object
// from the producer itself. The bit processor takes C from the record,
// never from a message.

// AtRestLog is what the at-rest route records (bitlog.Log with
// bitlog.AtRestJobs implements it): its jobs, and the ERROR rows of the
// objects of a job that failed.
type AtRestLog interface {
	bitlog.AtRestJobs
	Record(ctx context.Context, r bitlog.Row) error
}

// AtRest configures the at-rest route of archived items.
type AtRest struct {
	// Checker runs the jobs (s3batch in production).
	Checker atrest.Checker `validate:"required"`
	// Log records the jobs.
	Log AtRestLog `validate:"required"`
	// Queue is the bit queue: Follow queues the BIT tasks of a completed
	// job there.
	Queue queue.Queue `validate:"required"`
	// ReportBucket and ReportPrefix: where the jobs' manifests and
	// completion reports go (a job's are under
	// ReportPrefix/run/account/store/space/). RoleARN is the role the
	// provider runs them as; Priority their priority.
	ReportBucket          string `validate:"required"`
	ReportPrefix, RoleARN string
	Priority              int32
	// Method returns a store's archived method; nil: its fixity target's
	// (stores.Store.FixityTarget: compute-checksum on s3 stores unless the
	// registry says otherwise).
	Method func(st *stores.Store) stores.ArchivedMethod
	// Format of the queued tasks (default task.FormatJSON).
	Format task.Format
	Clock  clock.Clock // default the system clock
}

func (a *AtRest) validate() error {
	return validate.Struct("bit producer: AtRest", a).Err()
}

// ObjectLocator is a store whose items are objects of a bucket at key
// prefix + content ID (s3store.Store).
type ObjectLocator interface {
	ObjectPrefix(space string) (bucket, prefix string, err error)
}

// ArchivedClass reports whether a storage class the listing names keeps an
// object's bytes from being read without a restore.
func ArchivedClass(class string) bool { return class == "GLACIER" || class == "DEEP_ARCHIVE" }

// atRestRoute returns how the store's archived items are listed and
// located, or ok false when they take the ordinary route: no at-rest
// route configured, a method other than compute-checksum, or a provider
// that cannot list storage classes or name its objects.
func (p *Producer) atRestRoute(account, storeID string, prov storage.Provider) (storage.EntryLister, ObjectLocator, bool) {
	a := p.cfg.AtRest
	if a == nil {
		return nil, nil, false
	}
	st, err := p.cfg.Registry.Store(account, storeID)
	if err != nil {
		return nil, nil, false
	}
	method := st.FixityTarget().ArchivedMethod
	if a.Method != nil {
		method = a.Method(st)
	}
	if method != stores.ArchivedComputeChecksum {
		return nil, nil, false
	}
	u := storage.Unwrap(prov)
	el, ok1 := u.(storage.EntryLister)
	loc, ok2 := u.(ObjectLocator)
	if !ok1 || !ok2 {
		return nil, nil, false
	}
	return el, loc, true
}

// AtRestToken is the idempotency token of the at-rest job of a space in a
// run: the same run and space always give the same token.
func AtRestToken(k bitlog.AtRestKey) string {
	h := sha256.Sum256([]byte(k.RunID + "\x00" + k.Account + "\x00" + k.StoreID + "\x00" + k.SpaceID))
	return hex.EncodeToString(h[:])
}

// recordArchived records archived items of a bite as objects of the
// space's job, unless the job was submitted already (a repeated last
// bite: its manifest is closed and holds them).
func (p *Producer) recordArchived(ctx context.Context, k bitlog.AtRestKey, objs []bitlog.AtRestObject) error {
	j, err := p.cfg.AtRest.Log.AtRestJob(ctx, k)
	switch {
	case errors.Is(err, bitlog.ErrNoAtRestJob):
	case err != nil:
		return fmt.Errorf("bit: at-rest job %s: %w", k, err)
	case j.State != bitlog.AtRestListing:
		return nil
	}
	if err := p.cfg.AtRest.Log.AddAtRestObjects(ctx, k, objs); err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", k, err)
	}
	return nil
}

// submit creates the space's at-rest job from its recorded objects and
// records the job's ID; a job submitted already is left alone.
func (p *Producer) submit(ctx context.Context, k bitlog.AtRestKey, loc ObjectLocator) error {
	a := p.cfg.AtRest
	j, err := a.Log.AtRestJob(ctx, k)
	if err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", k, err)
	}
	if j.State != bitlog.AtRestListing {
		return nil
	}
	bucket, prefix, err := loc.ObjectPrefix(k.SpaceID)
	if err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", k, err)
	}
	var objs []atrest.Object
	for after := ""; ; {
		page, more, err := a.Log.AtRestObjects(ctx, k, after, bitlog.MaxPageSize)
		if err != nil {
			return fmt.Errorf("bit: at-rest job %s: %w", k, err)
		}
		for _, o := range page {
			objs = append(objs, atrest.Object{Bucket: bucket, Key: prefix + o.ContentID})
		}
		if !more || len(page) == 0 {
			break
		}
		after = page[len(page)-1].ContentID
	}
	if len(objs) == 0 {
		return nil
	}
	id, err := a.Checker.Submit(ctx, atrest.Spec{
		Objects: objs, Algorithm: atrest.MD5,
		ReportBucket: a.ReportBucket,
		ReportPrefix: fmt.Sprintf("%s%s/%s/%s/%s/", a.ReportPrefix, k.RunID, k.Account, k.StoreID, k.SpaceID),
		RoleARN:      a.RoleARN, Priority: a.Priority, Token: AtRestToken(k),
		Description: fmt.Sprintf("mill bit run %s: %s/%s/%s", k.RunID, k.Account, k.StoreID, k.SpaceID),
	})
	if err != nil {
		return fmt.Errorf("bit: create the at-rest job of %s: %w", k, err)
	}
	err = a.Log.SetAtRestJob(ctx, bitlog.AtRestJob{AtRestKey: k, JobID: id, State: bitlog.AtRestSubmitted,
		Objects: int64(len(objs)), Submitted: clock.Or(a.Clock).Now()})
	if err != nil {
		return fmt.Errorf("bit: record the at-rest job %s of %s: %w", id, k, err)
	}
	p.log.Info("at-rest checksum job created", "job_id", id, "objects", len(objs), "run_id", k.RunID,
		"account", k.Account, "store_id", k.StoreID, "space_id", k.SpaceID)
	return nil
}

// Follow follows the recorded at-rest jobs that are not finished (see the
// top of this file). Each job is followed on its own; their errors are
// joined. Without an at-rest route it does nothing.
func (p *Producer) Follow(ctx context.Context) error {
	a := p.cfg.AtRest
	if a == nil {
		return nil
	}
	jobs, err := a.Log.OpenAtRestJobs(ctx)
	if err != nil {
		return fmt.Errorf("bit: open at-rest jobs: %w", err)
	}
	var errs []error
	for _, j := range jobs {
		if err := p.follow(ctx, j); err != nil {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (p *Producer) follow(ctx context.Context, j bitlog.AtRestJob) error {
	a := p.cfg.AtRest
	if j.State == bitlog.AtRestSubmitted {
		st, err := a.Checker.Describe(ctx, j.JobID)
		if err != nil {
			return fmt.Errorf("bit: describe at-rest job %s of %s: %w", j.JobID, j.AtRestKey, err)
		}
		switch st.State {
		case atrest.StateComplete:
			if err := p.ingest(ctx, j); err != nil {
				return err
			}
			j.State = bitlog.AtRestIngested
		case atrest.StateFailed, atrest.StateCancelled:
			return p.failJob(ctx, j, st)
		default:
			return nil // still running
		}
	}
	return p.queueJob(ctx, j)
}

// ingest stores the completion report of a complete job and marks the job
// ingested. A line for an object the job does not list is left out.
func (p *Producer) ingest(ctx context.Context, j bitlog.AtRestJob) error {
	a := p.cfg.AtRest
	prov, err := p.cfg.Opener.Open(ctx, j.Account, j.StoreID)
	if err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", j.JobID, err)
	}
	loc, ok := storage.Unwrap(prov).(ObjectLocator)
	if !ok {
		return fmt.Errorf("bit: at-rest job %s: store %s/%s does not name its objects", j.JobID, j.Account, j.StoreID)
	}
	bucket, prefix, err := loc.ObjectPrefix(j.SpaceID)
	if err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", j.JobID, err)
	}
	var batch []bitlog.AtRestObject
	recorded, foreign := 0, 0
	flush := func() error {
		n, err := a.Log.RecordAtRestResults(ctx, j.AtRestKey, batch)
		if err != nil {
			return fmt.Errorf("bit: record the results of at-rest job %s: %w", j.JobID, err)
		}
		recorded, foreign, batch = recorded+n, foreign+len(batch)-n, batch[:0]
		return nil
	}
	for r, err := range a.Checker.Results(ctx, j.JobID) {
		var le *s3batch.LineError
		switch {
		case errors.As(err, &le):
			// A line (or a manifest object without one) that yields no
			// checksum: the object's result is that error.
			r = atrest.Result{Object: le.Object, Error: le.Err.Error()}
		case err != nil:
			// The report could not be read: the job stays submitted and
			// the next invocation reads it again.
			return fmt.Errorf("bit: read the completion report of at-rest job %s: %w", j.JobID, err)
		}
		id, ok := strings.CutPrefix(r.Key, prefix)
		if r.Bucket != bucket || !ok || id == "" || r.VersionID != "" {
			foreign++
			continue
		}
		o := bitlog.AtRestObject{ContentID: id}
		sum := strings.ToLower(r.Checksum)
		switch {
		case r.OK && r.Algorithm == atrest.MD5 && storage.ValidMD5(sum):
			o.OK, o.Checksum = true, sum
		case r.OK:
			o.Error = fmt.Sprintf("the completion report gives no MD5 (%s %q)", r.Algorithm, r.Checksum)
		default:
			o.Error = r.Error
			if o.Error == "" {
				o.Error = "failed, no reason given"
			}
		}
		if batch = append(batch, o); len(batch) == bitlog.DefaultPageSize {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if foreign > 0 {
		p.log.Warn("at-rest completion report lines for objects the job does not list were left out",
			"job_id", j.JobID, "lines", foreign, "run_id", j.RunID, "account", j.Account, "store_id", j.StoreID, "space_id", j.SpaceID)
	}
	j.State = bitlog.AtRestIngested
	j.Updated = clock.Or(a.Clock).Now()
	if err := a.Log.SetAtRestJob(ctx, j); err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", j.JobID, err)
	}
	p.log.Info("at-rest checksum job ingested", "job_id", j.JobID, "results", recorded, "objects", j.Objects)
	return nil
}

// eachObject pages through the job's objects.
func (p *Producer) eachObject(ctx context.Context, k bitlog.AtRestKey, fn func([]bitlog.AtRestObject) error) error {
	for after := ""; ; {
		page, more, err := p.cfg.AtRest.Log.AtRestObjects(ctx, k, after, bitlog.DefaultPageSize)
		if err != nil {
			return fmt.Errorf("bit: at-rest job %s: %w", k, err)
		}
		if err := fn(page); err != nil {
			return err
		}
		if !more || len(page) == 0 {
			return nil
		}
		after = page[len(page)-1].ContentID
	}
}

// queueJob queues one BIT task naming the job per object with a result,
// records an ERROR row for each object the report left out, and marks
// the job queued. Repeated (a crash in between), it queues again: a BIT
// task is idempotent.
func (p *Producer) queueJob(ctx context.Context, j bitlog.AtRestJob) error {
	a := p.cfg.AtRest
	kind := p.storeKind(j.Account, j.StoreID)
	queued := 0
	err := p.eachObject(ctx, j.AtRestKey, func(objs []bitlog.AtRestObject) error {
		var entries []queue.SendEntry
		for _, o := range objs {
			if !o.Reported {
				if err := a.Log.Record(ctx, p.atRestError(j, kind, o.ContentID,
					fmt.Sprintf("compute-checksum job %s: its completion report has no line for the item", j.JobID))); err != nil {
					return fmt.Errorf("bit: %w", err)
				}
				continue
			}
			t := task.Bit{Account: j.Account, StoreID: j.StoreID, SpaceID: j.SpaceID, ContentID: o.ContentID,
				RunID: j.RunID, AtRestJob: j.JobID}.Task()
			body, err := task.Encode(t, a.Format)
			if err != nil {
				return fmt.Errorf("bit: encode BIT: %w", err)
			}
			entries = append(entries, queue.SendEntry{Body: body, Group: queue.GroupFor(t.Get(task.KeyAccount))})
		}
		if len(entries) > 0 {
			if err := a.Queue.Send(ctx, entries...); err != nil {
				return fmt.Errorf("bit: queue the BIT tasks of at-rest job %s: %w", j.JobID, err)
			}
		}
		queued += len(entries)
		return nil
	})
	if err != nil {
		return err
	}
	j.State, j.Updated = bitlog.AtRestQueued, clock.Or(a.Clock).Now()
	if err := a.Log.SetAtRestJob(ctx, j); err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", j.JobID, err)
	}
	p.log.Info("at-rest checksum job's BIT tasks queued", "job_id", j.JobID, "tasks", queued)
	return nil
}

// failJob records an ERROR row for each object of a failed or cancelled
// job, then marks the job failed: reported, never counted as checked.
func (p *Producer) failJob(ctx context.Context, j bitlog.AtRestJob, st atrest.Status) error {
	a := p.cfg.AtRest
	reason := st.Reason
	if reason == "" {
		reason = "no reason given"
	}
	what := "failed"
	if st.State == atrest.StateCancelled {
		what = "was cancelled"
	}
	details := fmt.Sprintf("compute-checksum job %s %s: %s", j.JobID, what, reason)
	kind := p.storeKind(j.Account, j.StoreID)
	err := p.eachObject(ctx, j.AtRestKey, func(objs []bitlog.AtRestObject) error {
		for _, o := range objs {
			if err := a.Log.Record(ctx, p.atRestError(j, kind, o.ContentID, details)); err != nil {
				return fmt.Errorf("bit: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	j.State, j.Reason, j.Updated = bitlog.AtRestFailed, details, clock.Or(a.Clock).Now()
	if err := a.Log.SetAtRestJob(ctx, j); err != nil {
		return fmt.Errorf("bit: at-rest job %s: %w", j.JobID, err)
	}
	p.log.Warn("at-rest checksum job did not complete; its items are recorded as errors", "job_id", j.JobID,
		"state", string(st.State), "reason", reason, "objects", j.Objects)
	return nil
}

func (p *Producer) atRestError(j bitlog.AtRestJob, kind, contentID, details string) bitlog.Row {
	return bitlog.Row{RunID: j.RunID, Account: j.Account, StoreID: j.StoreID, StoreKind: kind, SpaceID: j.SpaceID,
		ContentID: contentID, Result: bitlog.ResultError, Details: details,
		Method: bitlog.MethodAtRest, Archived: true, CheckedAt: clock.Or(p.cfg.AtRest.Clock).Now()}
}

func (p *Producer) storeKind(account, storeID string) string {
	if st, err := p.cfg.Registry.Store(account, storeID); err == nil {
		return string(st.Kind)
	}
	return ""
}
