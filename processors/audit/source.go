package audit

import (
	"cmp"
	"context"
	"fmt"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
)

// sourceStore returns the source store an AUDIT task claims
// (task.KeySourceStoreID) when it may be recorded: on an ADD_CONTENT or
// COPY_CONTENT, naming a store of the entry's account that the registry
// knows, and not the copy the entry is about. Otherwise it returns "" and
// logs why: the claim is not recorded, the rest of the task is. It is an
// error only when the registry could not be asked (the task is retried).
// The claim is a belief, like the entry's user: it authorises nothing.
func (p *Processor) sourceStore(ctx context.Context, e auditlog.Entry) (string, error) {
	src := e.SourceStoreID
	if src == "" {
		return "", nil
	}
	drop := func(why string) (string, error) {
		p.cfg.Logger.WarnContext(ctx, "audit: source store not recorded: "+why, "account", e.Account, "store_id", e.StoreID,
			"space_id", e.SpaceID, "content_id", storage.ShortID(e.ContentID), "action", e.Action, "source_store_id", storage.ShortID(src))
		return "", nil
	}
	if e.Action != task.ActionAddContent && e.Action != task.ActionCopyContent {
		return drop("only a content write (ADD_CONTENT, COPY_CONTENT) has one")
	}
	if src == e.StoreID && cmp.Or(e.SourceSpaceID, e.SpaceID) == e.SpaceID && cmp.Or(e.SourceContentID, e.ContentID) == e.ContentID {
		return drop("it names the copy written")
	}
	if _, err := p.cfg.Stores.Open(ctx, e.Account, src); err != nil {
		if processors.IsPermanent(err) {
			return drop("not a registered store of the account")
		}
		return "", fmt.Errorf("audit: %s %s: look up source store: %w", e.Action,
			auditlog.ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID), err)
	}
	return src, nil
}
