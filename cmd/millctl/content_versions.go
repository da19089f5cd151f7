package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// itemRecoverer is itemProvider for the commands on an item's versions:
// the store also as a storage.Recoverer (every store Mill opens is one; the
// audited decorator passes it through).
func itemRecoverer(ctx context.Context, o storeOpener, args []string) (storage.Provider, storage.Recoverer, error) {
	p, err := itemProvider(ctx, o, args)
	if err != nil {
		return nil, nil, err
	}
	r, ok := p.(storage.Recoverer)
	if !ok {
		return nil, nil, fmt.Errorf("%T keeps no recoverable versions", p)
	}
	return p, r, nil
}

const contentVersionsUsage = `millctl content versions ACCOUNT STORE SPACE CONTENT_ID

Lists, newest first, what the store keeps of the item from its deletes,
overwrites and property changes (for the retention period: the bucket's
noncurrent versions, or the store's trash): the version ID to pass to
content restore --version-id, when and why it stopped being current, its
size and MD5. The item itself need not exist, nor its space.`

// contentVersionsOptions are the options of content versions.
type contentVersionsOptions struct{ contentEnv }

func (o *contentVersionsOptions) run(ctx context.Context, a *app, args []string) error {
	_, r, err := itemRecoverer(ctx, o, args)
	if err != nil {
		return err
	}
	vs, err := r.Versions(ctx, args[2], args[3])
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		fmt.Fprintf(a.stderr, "%s/%s: no recoverable version\n", args[2], args[3])
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tREPLACED\tREASON\tSIZE\tMD5\tMIMETYPE")
	for _, v := range vs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", v.ID, v.Replaced.UTC().Format(time.RFC3339), dash(v.Reason),
			v.Info.Size, dash(v.Info.Checksum), dash(v.Info.MimeType))
	}
	return tw.Flush()
}

const contentRestoreUsage = `millctl content restore ACCOUNT STORE SPACE CONTENT_ID

Makes a recoverable version of the item (content versions lists them) its
current content again, with the checksum, mimetype and properties it had:
the newest by default, or --version-id ID. Whatever is current is kept
recoverable in turn. The restore goes through the audited provider: a
COPY_CONTENT task whose source is the item itself, naming the version
(restored-version), so the audit log records it and duplication copies the
restored content to the other stores. --create-space re-creates a space
that was deleted meanwhile (audited CREATE_SPACE; its ACLs start empty).`

// contentRestoreOptions are the options of content restore.
type contentRestoreOptions struct {
	contentWriter
	version     string
	createSpace bool
}

func (o *contentRestoreOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.version, "version-id", "", "`ID` of the version to restore, from content versions (default: the newest)")
	fs.BoolVar(&o.createSpace, "create-space", false, "re-create SPACE first when it no longer exists (audited CREATE_SPACE)")
}

func (o *contentRestoreOptions) run(ctx context.Context, a *app, args []string) error {
	p, r, err := itemRecoverer(ctx, o, args)
	if err != nil {
		return err
	}
	space, id := args[2], args[3]
	if _, err := p.SpaceACLs(ctx, space); errors.Is(err, storage.ErrNotFound) {
		if !o.createSpace {
			return fmt.Errorf("space %s does not exist on store %s (deleted?): pass --create-space to re-create it", space, args[1])
		}
		if err := p.CreateSpace(ctx, space); err != nil {
			return auditNote(err)
		}
	}
	info, err := r.Restore(ctx, space, id, o.version)
	if err != nil {
		return auditNote(err)
	}
	fmt.Fprintf(a.stdout, "restored %s/%s: %d bytes, md5 %s\n", space, id, info.Size, info.Checksum)
	return nil
}
