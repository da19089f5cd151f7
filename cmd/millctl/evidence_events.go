package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/millfleet/mill/pkg/evidence"
)

const evidenceEventsUsage = `millctl evidence events --log DIR|s3://BUCKET/PREFIX --key FILE [filters] [--format jsonl|premis-xml] [--out FILE]

Exports the events of an evidence log up to its latest checkpoint, each
checked against the signed checkpoint as it is read (the whole log's
consistency is 'millctl evidence verify'). --format jsonl (the default)
writes each event's canonical bytes, one a line; premis-xml one PREMIS 3
document (an intellectual entity per content item, the events, their agents).
Filters: --account, --space, --item (a content ID), --since and --until
(RFC 3339 times: since inclusive, until exclusive).`

type evidenceEventsOptions struct {
	evidenceLogFlags
	format, out          string
	account, space, item string
	since, until         string
	sinceTime, untilTime time.Time
	hasSince, hasUntil   bool
}

func (o *evidenceEventsOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.format, "format", "jsonl", "output `format`: jsonl or premis-xml")
	fs.StringVar(&o.out, "out", "", "write to `file` instead of stdout")
	fs.StringVar(&o.account, "account", "", "only events of this `account`")
	fs.StringVar(&o.space, "space", "", "only events of this `space`")
	fs.StringVar(&o.item, "item", "", "only events of this content `ID`")
	fs.StringVar(&o.since, "since", "", "only events at or after this `time` (RFC 3339)")
	fs.StringVar(&o.until, "until", "", "only events before this `time` (RFC 3339)")
}

// parse checks the options and parses the times.
func (o *evidenceEventsOptions) parse() error {
	if o.format != "jsonl" && o.format != "premis-xml" {
		return usagef("--format %q: want jsonl or premis-xml", o.format)
	}
	var err error
	if o.since != "" {
		if o.sinceTime, err = time.Parse(time.RFC3339Nano, o.since); err != nil {
			return usagef("--since %q: want an RFC 3339 time", o.since)
		}
		o.hasSince = true
	}
	if o.until != "" {
		if o.untilTime, err = time.Parse(time.RFC3339Nano, o.until); err != nil {
			return usagef("--until %q: want an RFC 3339 time", o.until)
		}
		o.hasUntil = true
	}
	return nil
}

// match reports whether the event passes the filters (of its object, or
// for a replication or repair of its source).
func (o *evidenceEventsOptions) match(e *evidence.Event) bool {
	copies := []evidence.Copy{e.Object}
	if e.Source != nil {
		copies = append(copies, *e.Source)
	}
	ok := false
	for _, c := range copies {
		if (o.account == "" || c.Account == o.account) && (o.space == "" || c.Space == o.space) && (o.item == "" || c.ContentID == o.item) {
			ok = true
		}
	}
	if !ok {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, e.Time)
	if err != nil {
		return false // Validate makes this unreachable
	}
	return (!o.hasSince || !t.Before(o.sinceTime)) && (!o.hasUntil || t.Before(o.untilTime))
}

func (o *evidenceEventsOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if err := o.parse(); err != nil {
		return err
	}
	b, v, err := o.open(ctx, a)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	var matched []*evidence.Event
	count := 0
	cp, err := evidence.Events(ctx, b, v, func(_ int64, e *evidence.Event) error {
		if !o.match(e) {
			return nil
		}
		count++
		if o.format == "premis-xml" {
			matched = append(matched, e)
			return nil
		}
		line, err := e.Canonical()
		if err != nil {
			return err
		}
		w.Write(line)
		return w.WriteByte('\n')
	})
	if err != nil {
		return err
	}
	if o.format == "premis-xml" {
		if len(matched) == 0 {
			return fmt.Errorf("no event of the log (size %d) matches: a PREMIS document needs one", cp.Size)
		}
		if err := evidence.EncodePREMIS(w, matched); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "%d of %d events of log %s (checkpoint size %d)\n", count, cp.Size, cp.Origin, cp.Size)
	if o.out == "" {
		_, err = io.Copy(a.stdout, &buf)
		return err
	}
	return writeFileAtomic(o.out, &buf)
}
