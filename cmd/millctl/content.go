package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/stores"
)

// contentEnv is the flag group of the content commands that read: the
// registry source. Their stores open plain (provider).
type contentEnv struct {
	a   *app
	src *configSource
}

func (e *contentEnv) defineGroup(fs *flag.FlagSet, a *app) { e.a, e.src = a, configFlags(fs, a) }

// contentWriter is the flag group of the content commands that write (and
// dev load): the registry source, the audit queue and who writes. Their
// stores open through the audited provider (provider).
type contentWriter struct {
	contentEnv
	queuePrefix string
	userID      string
	format      *wiring.WireFormat
	claims      *wiring.Claims
}

func (e *contentWriter) defineGroup(fs *flag.FlagSet, a *app) {
	e.contentEnv.defineGroup(fs, a)
	wiring.QueuePrefixVar(fs, &e.queuePrefix)
	fs.StringVar(&e.userID, "user-id", "millctl", "user `id` recorded in the AUDIT tasks")
	e.format = wiring.WireFormatFlag(fs)
	e.claims = wiring.ClaimsFlags(fs)
}

// openAuditQueue opens the audit queue; tests replace it.
var openAuditQueue = func(ctx context.Context, a *app, name string, claims *wiring.Claims) (queue.Queue, error) {
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return claims.Open(ctx, cfg.SQS(), cfg.S3(), name, sqsqueue.Config{})
}

// storeOpener is how a content command opens a registered store: a
// contentEnv (plain) or a contentWriter (audited).
type storeOpener interface {
	provider(ctx context.Context, account, storeID string) (storage.Provider, error)
}

// itemProvider checks the arguments ACCOUNT STORE SPACE CONTENT_ID of the
// one-item commands and opens their store with o.
func itemProvider(ctx context.Context, o storeOpener, args []string) (storage.Provider, error) {
	if len(args) != 4 {
		return nil, usagef("want ACCOUNT STORE SPACE CONTENT_ID")
	}
	return o.provider(ctx, args[0], args[1])
}

// provider opens a registered store, plain.
func (e *contentEnv) provider(ctx context.Context, account, storeID string) (storage.Provider, error) {
	p, _, err := e.open(ctx, account, storeID)
	return p, err
}

// open opens a registered store, plain, and returns its entry.
func (e *contentEnv) open(ctx context.Context, account, storeID string) (storage.Provider, *stores.Store, error) {
	reg, err := e.src.registry(ctx)
	if err != nil {
		return nil, nil, printFileErrors(e.a, err)
	}
	s, err := reg.Store(account, storeID)
	if err != nil {
		return nil, nil, err
	}
	var base *aws.Config
	pathStyle := false
	if s.Kind == storage.KindS3 {
		cfg, err := e.a.awsConfig(ctx)
		if err != nil {
			return nil, nil, err
		}
		base, pathStyle = &cfg.AWS, cfg.EndpointOverride
	}
	p, err := wiring.NewOpener(reg, base, pathStyle).Open(ctx, account, storeID)
	return p, s, err
}

// provider opens a registered store through the audited provider: every
// write queues its AUDIT task.
func (e *contentWriter) provider(ctx context.Context, account, storeID string) (storage.Provider, error) {
	p, s, err := e.open(ctx, account, storeID)
	if err != nil {
		return p, err
	}
	format, err := e.format.Parse()
	if err != nil {
		return nil, usagef("%v", err)
	}
	q, err := openAuditQueue(ctx, e.a, queue.Name(e.queuePrefix, queue.KeyAudit), e.claims)
	if err != nil {
		return nil, fmt.Errorf("open the audit queue: %w", err)
	}
	return audited.New(p, q, audited.Config{Account: account, StoreID: storeID, StoreKind: s.Kind, UserID: e.userID, Format: format})
}

// auditNote turns ErrNotAudited into a message that says what happened.
func auditNote(err error) error {
	if errors.Is(err, audited.ErrNotAudited) {
		return fmt.Errorf("%w\nthe change is made; the next duplication sweep and bit check will pick it up", err)
	}
	return err
}

const contentPutUsage = `millctl content put ACCOUNT STORE SPACE CONTENT_ID FILE|-

Uploads FILE (- for stdin) through the audited provider of the store: an
ADD_CONTENT task goes to the audit queue. The MD5 of a regular FILE is computed
first and verified by the store.`

// contentPutOptions are the options of content put.
type contentPutOptions struct {
	contentWriter
	mimetype    string
	props       propsFlag
	createSpace bool
}

func (o *contentPutOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.mimetype, "mimetype", "", "content `type` (default application/octet-stream)")
	o.props = propsFlag{}
	fs.Var(o.props, "prop", "content property `KEY=VALUE` (repeatable)")
	fs.BoolVar(&o.createSpace, "create-space", false, "create SPACE first when it does not exist (audited CREATE_SPACE)")
}

func (o *contentPutOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 5 {
		return usagef("want ACCOUNT STORE SPACE CONTENT_ID FILE|-")
	}
	account, storeID, space, id, file := args[0], args[1], args[2], args[3], args[4]
	in, size, sum, err := openUpload(a, file)
	if err != nil {
		return err
	}
	defer in.Close()
	p, err := o.provider(ctx, account, storeID)
	if err != nil {
		return err
	}
	if o.createSpace {
		if _, err := p.SpaceACLs(ctx, space); errors.Is(err, storage.ErrNotFound) {
			if err := p.CreateSpace(ctx, space); err != nil {
				return auditNote(err)
			}
		}
	}
	info, err := p.Put(ctx, space, id, in, storage.PutOptions{Size: size, Checksum: sum, MimeType: o.mimetype, Properties: maps.Clone(o.props)})
	if err != nil {
		return auditNote(err)
	}
	fmt.Fprintf(a.stdout, "stored %s/%s: %d bytes, md5 %s\n", space, id, info.Size, info.Checksum)
	return nil
}

// openUpload opens what content put uploads. A regular file is hashed
// first so the store verifies the MD5 and knows the size; stdin streams
// with size -1 (the store computes the checksum).
func openUpload(a *app, file string) (io.ReadCloser, int64, string, error) {
	if file == "-" {
		return io.NopCloser(a.stdin), -1, "", nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, "", err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s is not a regular file", file)
		}
		return nil, 0, "", err
	}
	sum, _, err := storage.MD5Hex(f)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, "", err
	}
	return f, st.Size(), sum, nil
}

const contentGetUsage = "millctl content get ACCOUNT STORE SPACE CONTENT_ID\n\nStreams the item to stdout, or to --out FILE (written atomically)."

// contentGetOptions are the options of content get.
type contentGetOptions struct {
	contentEnv
	out string
}

func (o *contentGetOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.out, "out", "", "write to `file` instead of stdout")
}

func (o *contentGetOptions) run(ctx context.Context, a *app, args []string) error {
	p, err := itemProvider(ctx, o, args)
	if err != nil {
		return err
	}
	rc, _, err := p.Get(ctx, args[2], args[3])
	if err != nil {
		return err
	}
	defer rc.Close()
	if o.out == "" {
		_, err = io.Copy(a.stdout, rc)
		return err
	}
	return writeFileAtomic(o.out, rc)
}

const contentRmUsage = "millctl content rm ACCOUNT STORE SPACE CONTENT_ID\n\nDeletes the item through the audited provider (DELETE_CONTENT)."

// contentRmOptions are the options of content rm.
type contentRmOptions struct{ contentWriter }

func (o *contentRmOptions) run(ctx context.Context, a *app, args []string) error {
	p, err := itemProvider(ctx, o, args)
	if err != nil {
		return err
	}
	if err := p.Delete(ctx, args[2], args[3]); err != nil {
		return auditNote(err)
	}
	fmt.Fprintf(a.stdout, "deleted %s/%s\n", args[2], args[3])
	return nil
}

const contentLsUsage = `millctl content ls ACCOUNT STORE [SPACE]

Without SPACE, lists the store's spaces. With SPACE, lists up to --limit
content ids after --after (byte order); when more follow, a last line on
stderr gives the --after value to continue with.`

// contentLsOptions are the options of content ls.
type contentLsOptions struct {
	contentEnv
	after string
	limit int
}

func (o *contentLsOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.after, "after", "", "list content ids after this `id`")
	fs.IntVar(&o.limit, "limit", 1000, "list at most `n` ids (0 = all)")
}

func (o *contentLsOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 2 && len(args) != 3 {
		return usagef("want ACCOUNT STORE [SPACE]")
	}
	if o.limit < 0 {
		return usagef("--limit must not be negative")
	}
	p, err := o.provider(ctx, args[0], args[1])
	if err != nil {
		return err
	}
	if len(args) == 2 {
		spaces, err := p.ListSpaces(ctx)
		if err != nil {
			return err
		}
		for _, s := range spaces {
			fmt.Fprintln(a.stdout, s)
		}
		return nil
	}
	return o.listContent(ctx, a, p, args[2])
}

// listContent lists the content ids of space, --limit after --after.
func (o *contentLsOptions) listContent(ctx context.Context, a *app, p storage.Provider, space string) error {
	marker, left := o.after, o.limit
	for {
		page := 1000
		if o.limit > 0 {
			page = min(page, left)
		}
		ids, more, err := p.ListContent(ctx, space, marker, page)
		if err != nil {
			return err
		}
		for _, id := range ids {
			fmt.Fprintln(a.stdout, id)
		}
		if len(ids) > 0 {
			marker = ids[len(ids)-1]
		}
		left -= len(ids)
		if !more || len(ids) == 0 {
			return nil
		}
		if o.limit > 0 && left <= 0 {
			fmt.Fprintf(a.stderr, "more items follow: --after %q\n", marker)
			return nil
		}
	}
}
