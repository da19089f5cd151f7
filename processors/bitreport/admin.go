package bitreport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/tsv"
)

// The account's copy of a report (Config.AdminSpace): DuraCloud's admin
// space and the Java Mill's names.
const (
	// AdminSpaceID is the space DuraCloud keeps administrative files in.
	AdminSpaceID = "x-duracloud-admin"
	// AdminMimeType is the mimetype the Java Mill gives reports.
	AdminMimeType = "text/tsv"
	// AdminUserID is the user of the copy's audit entries.
	AdminUserID = "mill-bitreport"
	// adminStamp is the Java Mill's date in report names
	// (yyyy-MM-dd-HH-mm-ss), in UTC.
	adminStamp = "2006-01-02-15-04-05"
)

// AdminContentID is the content ID of the account's copy of a report, the
// Java Mill's: bit-integrity/{space}/{store}/bit-integrity_{account}_{store}_{space}_{yyyy-MM-dd-HH-mm-ss}.tsv,
// the time being the run's start (so a redelivered report replaces its
// copy) or, outside any run, now.
func AdminContentID(r task.BitReport, now time.Time) string {
	at, err := time.Parse("20060102T150405Z", r.RunID)
	if err != nil {
		at = now
	}
	name := "bit-integrity_" + strings.Join([]string{r.Account, r.StoreID, r.SpaceID, at.UTC().Format(adminStamp)}, "_") + ".tsv"
	return "bit-integrity/" + r.SpaceID + "/" + r.StoreID + "/" + name
}

// adminCopy stores the report file f (size bytes) in the account's primary
// store: AdminSpaceID (created when missing) / AdminContentID, through the
// audited provider, with its MD5 verified by the store. It returns where
// ("account/store/space/id").
func (p *Processor) adminCopy(ctx context.Context, r task.BitReport, f *os.File, size int64, now time.Time, log *slog.Logger) (string, error) {
	acct := p.cfg.Stores.Registry().Account(r.Account)
	if acct == nil || acct.Primary() == nil {
		log.Warn("account has no primary store; report not copied to its admin space")
		return "", nil
	}
	primary := acct.Primary().ID
	raw, err := p.cfg.Stores.Open(ctx, r.Account, primary)
	if err != nil {
		return "", fmt.Errorf("bitreport: open primary store %s/%s: %w", r.Account, primary, err)
	}
	prov, err := audited.New(raw, p.cfg.AuditQueue, audited.Config{Account: r.Account, StoreID: primary,
		UserID: AdminUserID, Format: p.cfg.Format, Clock: p.cfg.Clock})
	if err != nil {
		return "", fmt.Errorf("bitreport: %w", err)
	}
	if _, err := prov.SpaceACLs(ctx, AdminSpaceID); errors.Is(err, storage.ErrNotFound) {
		if err := prov.CreateSpace(ctx, AdminSpaceID); err != nil {
			return "", fmt.Errorf("bitreport: create %s in %s/%s: %w", AdminSpaceID, r.Account, primary, err)
		}
	} else if err != nil {
		return "", fmt.Errorf("bitreport: %s in %s/%s: %w", AdminSpaceID, r.Account, primary, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("bitreport: %w", err)
	}
	sum, _, err := storage.MD5Hex(f)
	if err != nil {
		return "", fmt.Errorf("bitreport: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", fmt.Errorf("bitreport: %w", err)
	}
	id := AdminContentID(r, now)
	if _, err := prov.Put(ctx, AdminSpaceID, id, f, storage.PutOptions{Size: size, Checksum: sum, MimeType: AdminMimeType}); err != nil {
		return "", fmt.Errorf("bitreport: copy the report to %s/%s/%s: %w", r.Account, primary, AdminSpaceID, err)
	}
	where := r.Account + "/" + primary + "/" + AdminSpaceID + "/" + id
	log.Info("bit integrity report copied to the account's admin space", "copy", where)
	return where, nil
}

// ReportEvent is the notification of a report whose result is FAILURE or ERROR:
// its counts, where it is (and its copy in the account, when made) and its
// first problem rows (problems, at most MaxProblems).
func ReportEvent(rep bitlog.Report, problems []bitlog.Row, adminCopy string) notify.Event {
	c := rep.Counts
	var b strings.Builder
	fmt.Fprintf(&b, "The bit-integrity report of a space found problems.\n\n")
	run := rep.RunID
	if run == "" {
		run = "none (a Java-shaped BIT_REPORT: the checks made outside a bit producer run)"
	}
	fmt.Fprintf(&b, "Account:  %s\nStore:    %s\nSpace:    %s\nRun:      %s\nResult:   %s\n", rep.Account, rep.StoreID, rep.SpaceID, run, rep.Result)
	fmt.Fprintf(&b, "Items:    %d reported: %d SUCCESS, %d FAILURE, %d ERROR\n", c.Total, c.Success, c.Failure, c.Error)
	fmt.Fprintf(&b, "Report:   %s\n", rep.Location)
	if adminCopy != "" {
		fmt.Fprintf(&b, "Copy:     %s\n", adminCopy)
	}
	if len(problems) > 0 {
		fmt.Fprintf(&b, "\nProblems (the first %d of %d):\n", len(problems), c.Failure+c.Error)
		for _, r := range problems {
			fmt.Fprintf(&b, "  %s  %s  case %d  %s\n", storage.QuoteID(r.ContentID), r.Result, r.Case, storage.ShortID(tsv.Cell(r.Details)))
		}
	}
	all, runFlag := "All results", " --run "+rep.RunID
	if rep.RunID == "" {
		all, runFlag = "All results, of every run", ""
	}
	fmt.Fprintf(&b, "\n%s: millctl bitlog results%s --account %s --store %s --space %s\n", all, runFlag, rep.Account, rep.StoreID, rep.SpaceID)
	return notify.Event{
		Type: notify.EventBitReport,
		Subject: fmt.Sprintf("Mill: bit report %s for %s/%s/%s (%d failures, %d errors)",
			rep.Result, rep.Account, rep.StoreID, rep.SpaceID, c.Failure, c.Error),
		Body: b.String(),
		Attributes: map[string]string{notify.AttrAccount: rep.Account, notify.AttrStoreID: rep.StoreID,
			notify.AttrSpaceID: rep.SpaceID, notify.AttrRunID: rep.RunID, notify.AttrResult: string(rep.Result)},
		Time: rep.CreatedAt,
	}
}
