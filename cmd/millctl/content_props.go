package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"mime"
	"strings"
	"unicode"

	"github.com/millfleet/mill/pkg/storage"
)

// infoJSON is how content props and content props set print an item.
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

const contentPropsUsage = "millctl content props ACCOUNT STORE SPACE CONTENT_ID\n\nPrints the item's metadata as JSON."

// contentPropsOptions are the options of content props.
type contentPropsOptions struct{ contentEnv }

func (o *contentPropsOptions) run(ctx context.Context, a *app, args []string) error {
	p, err := itemProvider(ctx, o, args)
	if err != nil {
		return err
	}
	info, err := p.Head(ctx, args[2], args[3])
	if err != nil {
		return err
	}
	return printInfo(a.stdout, info)
}

const contentPropsSetUsage = `millctl content props set ACCOUNT STORE SPACE CONTENT_ID KEY=VALUE...

Merges the KEY=VALUE pairs into the item's properties (--replace: they become
the only properties; --delete KEY removes one) through the audited provider
(SET_CONTENT_PROPERTIES), then prints the item's metadata. content-mimetype=TYPE
changes the item's mimetype instead: the item is written again, its bytes
verified against its MD5 (ADD_CONTENT; what it replaces stays recoverable).
The other system properties (content-checksum, -md5, -size, -modified) are
the store's and are refused.`

// contentPropsSetOptions are the options of content props set.
type contentPropsSetOptions struct {
	contentWriter
	replace bool
	del     stringList
}

func (o *contentPropsSetOptions) define(fs *flag.FlagSet, _ *app) {
	fs.BoolVar(&o.replace, "replace", false, "replace all properties instead of merging")
	fs.Var(&o.del, "delete", "remove property `KEY` (repeatable)")
}

func (o *contentPropsSetOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) < 4 || (len(args) == 4 && len(o.del) == 0 && !o.replace) {
		return usagef("want ACCOUNT STORE SPACE CONTENT_ID KEY=VALUE...")
	}
	set := propsFlag{}
	for _, kv := range args[4:] {
		if err := set.Set(kv); err != nil {
			return usagef("%v", err)
		}
	}
	mimeType, err := takeMimeType(set, o.del)
	if err != nil {
		return err
	}
	p, err := o.provider(ctx, args[0], args[1])
	if err != nil {
		return err
	}
	space, id := args[2], args[3]
	info, err := p.Head(ctx, space, id)
	if err != nil {
		return err
	}
	props := storage.UserProperties(info.Properties)
	if o.replace {
		props = map[string]string{}
	}
	maps.Copy(props, set)
	for _, k := range o.del {
		delete(props, k)
	}
	if mimeType != "" && mimeType != cmp.Or(info.MimeType, storage.DefaultMimeType) {
		err = rewrite(ctx, p, space, id, info, mimeType, props)
	} else {
		err = p.SetProperties(ctx, space, id, props)
	}
	if err != nil {
		return auditNote(err)
	}
	info, err = p.Head(ctx, space, id)
	if err != nil {
		return err
	}
	return printInfo(a.stdout, info)
}

// maxMimeTypeLen bounds a mimetype given on the command line.
const maxMimeTypeLen = 255

// takeMimeType removes content-mimetype from set and returns it ("" when
// not given), refusing the other system properties, a deleted
// content-mimetype and a value that is not a media type.
func takeMimeType(set map[string]string, del []string) (string, error) {
	for _, k := range del {
		if storage.IsSystemProperty(k) {
			return "", usagef("--delete %s: a system property is the store's, not a property to delete", k)
		}
	}
	mimeType := ""
	for k, v := range set {
		if !storage.IsSystemProperty(k) {
			continue
		}
		if !strings.EqualFold(k, storage.PropMimeType) {
			return "", usagef("%s: a system property is the store's; only %s can be set", k, storage.PropMimeType)
		}
		delete(set, k)
		if v == "" || len(v) > maxMimeTypeLen || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			return "", usagef("%s=%q: want a media type such as text/plain (printable, at most %d bytes)", k, v, maxMimeTypeLen)
		}
		if _, _, err := mime.ParseMediaType(v); err != nil || !strings.Contains(v, "/") {
			return "", usagef("%s=%q: want a media type such as text/plain", k, v)
		}
		mimeType = v
	}
	return mimeType, nil
}

// rewrite writes the item again with mimeType and props: a provider
// changes an item's mimetype only by writing it. The bytes are verified
// against the item's MD5, so a copy that went sour is never made current.
func rewrite(ctx context.Context, p storage.Provider, space, id string, info *storage.Info, mimeType string, props map[string]string) error {
	sum := storage.ChecksumOf(info, nil)
	if sum.MD5 == "" || sum.ClaimContradicted {
		return fmt.Errorf("%s/%s: no MD5 to verify the item's bytes against (%s); its mimetype is not changed", space, storage.QuoteID(id), sum)
	}
	rc, cur, err := p.Get(ctx, space, id)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = p.Put(ctx, space, id, rc, storage.PutOptions{Size: cur.Size, Checksum: sum.MD5, MimeType: mimeType,
		Properties: props, StorageClass: cur.StorageClass})
	return err
}
