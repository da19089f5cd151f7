package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/task"
)

// contentEnv is what the content commands share: the registry source, the
// audit queue and who writes.
type contentEnv struct {
	a           *app
	src         *configSource
	queuePrefix *string
	userID      *string
	format      *string
	claims      *wiring.Claims
}

func contentFlags(fs *flag.FlagSet, a *app, writes bool) *contentEnv {
	e := &contentEnv{a: a, src: configFlags(fs, a)}
	if writes {
		e.queuePrefix = queuePrefixFlag(fs)
		e.userID = fs.String("user-id", "millctl", "user `id` recorded in the AUDIT tasks")
		e.format = fs.String("audit-format", "json", "AUDIT message `format`: json, or properties for DuraCloud's Java workers")
		e.claims = wiring.ClaimsFlags(fs)
	}
	return e
}

// openAuditQueue opens the audit queue; tests replace it.
var openAuditQueue = func(ctx context.Context, a *app, name string, claims *wiring.Claims) (queue.Queue, error) {
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	return claims.Open(ctx, cfg.SQS(), cfg.S3(), name, sqsqueue.Config{})
}

// itemProvider checks the arguments ACCOUNT STORE SPACE CONTENT_ID of the
// one-item commands and opens their store (see provider).
func (e *contentEnv) itemProvider(ctx context.Context, args []string, audit bool) (storage.Provider, error) {
	if len(args) != 4 {
		return nil, usagef("want ACCOUNT STORE SPACE CONTENT_ID")
	}
	return e.provider(ctx, args[0], args[1], audit)
}

// provider opens a registered store: plain for reads, audited for writes.
func (e *contentEnv) provider(ctx context.Context, account, storeID string, audit bool) (storage.Provider, error) {
	reg, err := e.src.registry(ctx)
	if err != nil {
		return nil, printFileErrors(e.a, err)
	}
	s, err := reg.Store(account, storeID)
	if err != nil {
		return nil, err
	}
	var base *aws.Config
	pathStyle := false
	if s.Kind == storage.KindS3 {
		cfg, err := e.a.awsConfig(ctx)
		if err != nil {
			return nil, err
		}
		base, pathStyle = &cfg.AWS, cfg.EndpointOverride
	}
	p, err := wiring.NewOpener(reg, base, pathStyle).Open(ctx, account, storeID)
	if err != nil || !audit {
		return p, err
	}
	format, err := task.ParseFormat(*e.format)
	if err != nil {
		return nil, usagef("--audit-format: %v", err)
	}
	q, err := openAuditQueue(ctx, e.a, queue.Name(*e.queuePrefix, queue.KeyAudit), e.claims)
	if err != nil {
		return nil, fmt.Errorf("open the audit queue: %w", err)
	}
	return audited.New(p, q, audited.Config{Account: account, StoreID: storeID, StoreKind: s.Kind, UserID: *e.userID, Format: format})
}

// propsFlag collects repeated --prop k=v.
type propsFlag map[string]string

func (p propsFlag) String() string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k+"="+p[k])
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

func (p propsFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want KEY=VALUE, got %q", v)
	}
	p[k] = val
	return nil
}

// infoJSON is how content props prints an item.
type infoJSON struct {
	ContentID        string            `json:"contentId"`
	Checksum         string            `json:"checksum"`
	ProviderChecksum string            `json:"providerChecksum,omitempty"`
	Size             int64             `json:"size"`
	MimeType         string            `json:"mimetype"`
	Modified         string            `json:"modified,omitempty"`
	Properties       map[string]string `json:"properties"`
}

func printInfo(w io.Writer, info *storage.Info) error {
	j := infoJSON{ContentID: info.ContentID, Checksum: info.Checksum, ProviderChecksum: info.ProviderChecksum,
		Size: info.Size, MimeType: info.MimeType, Properties: info.Properties}
	if !info.Modified.IsZero() {
		j.Modified = info.Modified.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if j.Properties == nil {
		j.Properties = map[string]string{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(j)
}

// auditNote turns ErrNotAudited into a message that says what happened.
func auditNote(err error) error {
	if errors.Is(err, audited.ErrNotAudited) {
		return fmt.Errorf("%w\nthe change is made; the next duplication sweep and bit check will pick it up", err)
	}
	return err
}

func init() {
	register(&command{
		name:    "content put",
		summary: "store a file in a space of a registered store (audited)",
		usage: `millctl content put ACCOUNT STORE SPACE CONTENT_ID FILE|-

Uploads FILE (- for stdin) through the audited provider of the store: an
ADD_CONTENT task goes to the audit queue. The MD5 of a regular FILE is computed
first and verified by the store.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := contentFlags(fs, a, true)
			mimetype := fs.String("mimetype", "", "content `type` (default application/octet-stream)")
			props := propsFlag{}
			fs.Var(props, "prop", "content property `KEY=VALUE` (repeatable)")
			createSpace := fs.Bool("create-space", false, "create SPACE first when it does not exist (audited CREATE_SPACE)")
			return func(ctx context.Context, args []string) error {
				if len(args) != 5 {
					return usagef("want ACCOUNT STORE SPACE CONTENT_ID FILE|-")
				}
				account, storeID, space, id, file := args[0], args[1], args[2], args[3], args[4]
				in, size, sum, err := openUpload(a, file)
				if err != nil {
					return err
				}
				defer in.Close()
				p, err := e.provider(ctx, account, storeID, true)
				if err != nil {
					return err
				}
				if *createSpace {
					if _, err := p.SpaceACLs(ctx, space); errors.Is(err, storage.ErrNotFound) {
						if err := p.CreateSpace(ctx, space); err != nil {
							return auditNote(err)
						}
					}
				}
				info, err := p.Put(ctx, space, id, in, storage.PutOptions{Size: size, Checksum: sum, MimeType: *mimetype, Properties: maps.Clone(props)})
				if err != nil {
					return auditNote(err)
				}
				fmt.Fprintf(a.stdout, "stored %s/%s: %d bytes, md5 %s\n", space, id, info.Size, info.Checksum)
				return nil
			}
		},
	})
	register(&command{
		name:    "content get",
		summary: "write a content item to stdout or --out",
		usage:   "millctl content get ACCOUNT STORE SPACE CONTENT_ID\n\nStreams the item to stdout, or to --out FILE (written atomically).",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := contentFlags(fs, a, false)
			out := fs.String("out", "", "write to `file` instead of stdout")
			return func(ctx context.Context, args []string) error {
				p, err := e.itemProvider(ctx, args, false)
				if err != nil {
					return err
				}
				rc, _, err := p.Get(ctx, args[2], args[3])
				if err != nil {
					return err
				}
				defer rc.Close()
				if *out == "" {
					_, err = io.Copy(a.stdout, rc)
					return err
				}
				return writeFileAtomic(*out, rc)
			}
		},
	})
	register(&command{
		name:    "content ls",
		summary: "list the spaces of a store, or the content of a space",
		usage: `millctl content ls ACCOUNT STORE [SPACE]

Without SPACE, lists the store's spaces. With SPACE, lists up to --limit
content ids after --after (byte order); when more follow, a last line on
stderr gives the --after value to continue with.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := contentFlags(fs, a, false)
			after := fs.String("after", "", "list content ids after this `id`")
			limit := fs.Int("limit", 1000, "list at most `n` ids (0 = all)")
			return func(ctx context.Context, args []string) error {
				if len(args) != 2 && len(args) != 3 {
					return usagef("want ACCOUNT STORE [SPACE]")
				}
				if *limit < 0 {
					return usagef("--limit must not be negative")
				}
				p, err := e.provider(ctx, args[0], args[1], false)
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
				marker, left := *after, *limit
				for {
					page := 1000
					if *limit > 0 {
						page = min(page, left)
					}
					ids, more, err := p.ListContent(ctx, args[2], marker, page)
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
					if *limit > 0 && left <= 0 {
						fmt.Fprintf(a.stderr, "more items follow: --after %q\n", marker)
						return nil
					}
				}
			}
		},
	})
	register(&command{
		name:    "content rm",
		summary: "delete a content item (audited)",
		usage:   "millctl content rm ACCOUNT STORE SPACE CONTENT_ID\n\nDeletes the item through the audited provider (DELETE_CONTENT).",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := contentFlags(fs, a, true)
			return func(ctx context.Context, args []string) error {
				p, err := e.itemProvider(ctx, args, true)
				if err != nil {
					return err
				}
				if err := p.Delete(ctx, args[2], args[3]); err != nil {
					return auditNote(err)
				}
				fmt.Fprintf(a.stdout, "deleted %s/%s\n", args[2], args[3])
				return nil
			}
		},
	})
	register(&command{
		name:    "content props",
		summary: "show a content item's checksum, size, mimetype and properties",
		usage:   "millctl content props ACCOUNT STORE SPACE CONTENT_ID\n\nPrints the item's metadata as JSON.",
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := contentFlags(fs, a, false)
			return func(ctx context.Context, args []string) error {
				p, err := e.itemProvider(ctx, args, false)
				if err != nil {
					return err
				}
				info, err := p.Head(ctx, args[2], args[3])
				if err != nil {
					return err
				}
				return printInfo(a.stdout, info)
			}
		},
	})
	register(&command{
		name:    "content props set",
		summary: "set content properties (audited)",
		usage: `millctl content props set ACCOUNT STORE SPACE CONTENT_ID KEY=VALUE...

Merges the KEY=VALUE pairs into the item's properties (--replace: they become
the only properties; --delete KEY removes one) through the audited provider
(SET_CONTENT_PROPERTIES), then prints the item's metadata.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := contentFlags(fs, a, true)
			replace := fs.Bool("replace", false, "replace all properties instead of merging")
			var del stringList
			fs.Var(&del, "delete", "remove property `KEY` (repeatable)")
			return func(ctx context.Context, args []string) error {
				if len(args) < 4 || (len(args) == 4 && len(del) == 0 && !*replace) {
					return usagef("want ACCOUNT STORE SPACE CONTENT_ID KEY=VALUE...")
				}
				set := propsFlag{}
				for _, kv := range args[4:] {
					if err := set.Set(kv); err != nil {
						return usagef("%v", err)
					}
				}
				p, err := e.provider(ctx, args[0], args[1], true)
				if err != nil {
					return err
				}
				space, id := args[2], args[3]
				info, err := p.Head(ctx, space, id)
				if err != nil {
					return err
				}
				props := storage.UserProperties(info.Properties)
				if *replace {
					props = map[string]string{}
				}
				maps.Copy(props, set)
				for _, k := range del {
					delete(props, k)
				}
				if err := p.SetProperties(ctx, space, id, props); err != nil {
					return auditNote(err)
				}
				info, err = p.Head(ctx, space, id)
				if err != nil {
					return err
				}
				return printInfo(a.stdout, info)
			}
		},
	})
}

// stringList collects a repeated string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

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

// writeFileAtomic writes r to path through a temporary file and a rename.
func writeFileAtomic(path string, r io.Reader) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
