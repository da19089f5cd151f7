package bit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// C computed at rest (docs/ARCHITECTURE.md, Cold storage). A BIT task that
// names an at-rest job (task.Bit.AtRestJob) is checked with C = the MD5
// the provider computed in that job, as the bit producer recorded it in
// the bit log (bitlog.AtRestJobs): the job must be the one recorded for
// the task's run, account, store and space, its report ingested, with a
// line for the item; anything else is a forged or stale reference and
// permanent (dead letter). The item is only headed (S, and whether it
// changed since the job was created: then C is not used and the check is
// that of an unread item); no byte is read, nothing is restored.

// ErrAtRestRef: a BIT task names an at-rest job the bit log does not hold
// for it.
var ErrAtRestRef = errors.New("bit: at-rest job reference not recorded")

// atRestC is an item's result in an at-rest job.
type atRestC struct {
	job       string
	submitted time.Time
	ok        bool
	md5       string // when ok
	err       string // the provider's error when !ok
}

// holds reports whether the computed C is of the item as info shows it:
// not rewritten since the job was created (S3's times are whole seconds,
// so a change in the job's own second counts as after it).
func (a *atRestC) holds(info *storage.Info) bool {
	return !a.submitted.IsZero() && info.Modified.Before(a.submitted.Truncate(time.Second))
}

// atRestChecksumOf is storage.ChecksumOf with the bytes' MD5 computed at
// rest: the strongest source, as bytes read would be; a provider CRC
// cannot be checked against an MD5.
func atRestChecksumOf(info *storage.Info, md5 string) storage.CopyChecksum {
	c := storage.ChecksumOf(info, nil)
	providerMD5 := ""
	if alg, val, _ := storage.SplitProviderChecksum(info.ProviderChecksum); alg == storage.AlgMD5 && storage.ValidMD5(strings.ToLower(val)) {
		providerMD5 = strings.ToLower(val)
	}
	c.MD5, c.Source = md5, storage.SourceContent
	c.ProviderContradicted = providerMD5 != "" && providerMD5 != md5
	c.ProviderVerified = providerMD5 != "" && !c.ProviderContradicted
	c.ClaimContradicted = c.Claim != "" && c.Claim != md5
	return c
}

// atRestOf reads the item's result in the job the task names from the
// producer's record.
func (p *Processor) atRestOf(ctx context.Context, b task.Bit) (*atRestC, error) {
	jobs := p.obs.AtRest
	if jobs == nil {
		return nil, processors.Permanent(fmt.Errorf("%w: this processor has no record of at-rest jobs (job %q)", ErrAtRestRef, b.AtRestJob))
	}
	if _, err := p.cfg.Stores.Registry().Store(b.Account, b.StoreID); err != nil {
		return nil, processors.Permanent(fmt.Errorf("bit: %w", err))
	}
	k := bitlog.AtRestKey{RunID: b.RunID, Account: b.Account, StoreID: b.StoreID, SpaceID: b.SpaceID}
	refuse := func(why string) error {
		return processors.Permanent(fmt.Errorf("%w: job %s of %s/%s: %s", ErrAtRestRef,
			storage.QuoteID(b.AtRestJob), k, storage.ShortID(b.ContentID), why))
	}
	if b.RunID == "" {
		return nil, refuse("no run")
	}
	j, err := jobs.AtRestJob(ctx, k)
	if errors.Is(err, bitlog.ErrNoAtRestJob) || errors.Is(err, bitlog.ErrInvalid) {
		return nil, refuse("the run has no at-rest job for the space")
	}
	if err != nil {
		return nil, fmt.Errorf("bit: %w", err)
	}
	switch {
	case j.JobID != b.AtRestJob:
		return nil, refuse("the run's job for the space is another")
	case !j.State.Ingested():
		return nil, refuse(fmt.Sprintf("the job is %s, its report not ingested", j.State))
	}
	o, err := jobs.AtRestObject(ctx, k, b.ContentID)
	if errors.Is(err, bitlog.ErrNoAtRestJob) {
		return nil, refuse("the job does not list the item")
	}
	if err != nil {
		return nil, fmt.Errorf("bit: %w", err)
	}
	if !o.Reported {
		return nil, refuse("the job's report has no line for the item")
	}
	return &atRestC{job: j.JobID, submitted: j.Submitted, ok: o.OK, md5: o.Checksum, err: o.Error}, nil
}

// recordAtRestFailure records the ERROR row of an item the provider could
// not compute the checksum of: reported, never counted as checked.
func (p *Processor) recordAtRestFailure(ctx context.Context, b task.Bit, res *atRestC) error {
	st, err := p.cfg.Stores.Registry().Store(b.Account, b.StoreID)
	if err != nil {
		return processors.Permanent(fmt.Errorf("bit: %w", err))
	}
	row := bitlog.Row{
		RunID: b.RunID, Account: b.Account, StoreID: b.StoreID, StoreKind: string(st.Kind),
		SpaceID: b.SpaceID, ContentID: b.ContentID, Result: bitlog.ResultError,
		Details: fmt.Sprintf("compute-checksum job %s could not compute the checksum: %s", res.job, res.err),
		Method:  bitlog.MethodAtRest, Archived: true,
		CheckedAt: p.cfg.Clock.Now(), Agent: p.cfg.Agent,
	}
	if err := p.cfg.BitLog.Record(ctx, row); err != nil {
		return fmt.Errorf("bit: %w", err)
	}
	p.cfg.Logger.Warn("bit check", "result", string(row.Result), "details", row.Details, "run_id", b.RunID,
		"account", b.Account, "store_id", b.StoreID, "space_id", b.SpaceID, "content_id", b.ContentID)
	return nil
}

// ObserveRun is Observe for an item of a bit producer run: when the item
// is archived and the run's at-rest job holds a computed checksum of it
// (Observer.AtRest), that is C and nothing is read; otherwise it is
// Observe. The bit-error processor proves a repair of an archived copy so.
func (ob *Observer) ObserveRun(ctx context.Context, account, storeID, spaceID, contentID, runID string) (*Observation, error) {
	opts := observeOpts{headFirst: ob.HeadFirst}
	if ob.AtRest != nil && runID != "" {
		k := bitlog.AtRestKey{RunID: runID, Account: account, StoreID: storeID, SpaceID: spaceID}
		j, err := ob.AtRest.AtRestJob(ctx, k)
		switch {
		case errors.Is(err, bitlog.ErrNoAtRestJob) || errors.Is(err, bitlog.ErrInvalid):
		case err != nil:
			return nil, fmt.Errorf("bit: %w", err)
		case j.State.Ingested():
			o, err := ob.AtRest.AtRestObject(ctx, k, contentID)
			if err != nil && !errors.Is(err, bitlog.ErrNoAtRestJob) {
				return nil, fmt.Errorf("bit: %w", err)
			}
			if err == nil && o.Reported && o.OK {
				opts = observeOpts{atRest: &atRestC{job: j.JobID, submitted: j.Submitted, ok: true, md5: o.Checksum}}
			}
		}
	}
	return ob.observeItem(ctx, account, storeID, spaceID, contentID, opts)
}
