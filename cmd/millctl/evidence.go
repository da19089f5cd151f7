package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/evidence"
)

// The evidence commands: verify a tamper-evident evidence log offline,
// export an event's inclusion proof, check a proof (pkg/evidence).

const evidenceVerifyUsage = `millctl evidence verify --log DIR|s3://BUCKET/PREFIX --key FILE [--trusted FILE]

Checks an evidence log with only its blobs and the log's public verifier key
(FILE holds the note verifier key, "name+hash+key"): every checkpoint's
signature; that each checkpoint is consistent with the next (no history
rewritten); that the latest checkpoint is the newest; that every event is in
its canonical encoding, each ID once; that the events hash to every signed
root; and that every hash tile is the one the events give. Prints each
mismatch, naming the checkpoint, tile or leaf; the exit code is 1 when there
is any. --trusted names a checkpoint this verifier kept from an earlier run:
the log must still contain it (a log rolled back as a whole is detected).
--cross-check (with --database-url and --audit-table) also compares Mill's
records of --since to --until (default: to where the appender got) with the
log's events: every bit-log row and audit-log entry that makes an event must
have it, unchanged, every event of the period its record, and the content
index what the period's writes left; each mismatch is named (a record
changed, an event or a record deleted). Changes nothing.`

const evidenceProofUsage = `millctl evidence proof --log DIR|s3://BUCKET/PREFIX --key FILE --event ID [--out FILE]

Writes the inclusion proof of the event with ID as one self-contained JSON
file for a third party: the event's canonical bytes, its place in the log,
the latest signed checkpoint and the hashes from the event to the
checkpoint's root. The checkpoint is checked with the verifier key first.
Check it with 'millctl evidence check-proof'.`

const evidenceCheckProofUsage = `millctl evidence check-proof FILE --key FILE

Checks an inclusion proof file with only the log's public verifier key: the
checkpoint's signature, the event's canonical encoding, and that the event is
in the signed log. Prints the event; the exit code is 1 when the proof does
not check.`

// evidenceLogFlags are the flag group that names a log and its verifier
// key.
type evidenceLogFlags struct{ log, key string }

func (f *evidenceLogFlags) defineGroup(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&f.log, "log", "", "the evidence log: a `directory`, or s3://BUCKET/PREFIX")
	fs.StringVar(&f.key, "key", "", "`file` holding the log's note verifier key")
}

// open returns the log's blobs and verifier.
func (f *evidenceLogFlags) open(ctx context.Context, a *app) (blob.Store, note.Verifier, error) {
	if f.log == "" || f.key == "" {
		return nil, nil, usagef("--log and --key are required")
	}
	b, err := evidenceBlobs(ctx, a, f.log)
	if err != nil {
		return nil, nil, err
	}
	v, err := evidence.LoadVerifier(f.key)
	return b, v, err
}

// evidenceBlobs opens the log at loc: s3://BUCKET[/PREFIX] or a
// directory, which must exist: a blob store bounded by evidence.MaxBlob.
func evidenceBlobs(ctx context.Context, a *app, loc string) (blob.Store, error) {
	rest, ok := strings.CutPrefix(loc, "s3://")
	if !ok {
		if fi, err := os.Stat(loc); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("evidence log %s: not a directory (or s3://BUCKET/PREFIX)", loc)
		}
		return dirblob.New(loc, &blob.Options{MaxSize: evidence.MaxBlob}), nil
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return nil, usagef("--log %s: no bucket", loc)
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = o.UsePathStyle || cfg.EndpointOverride })
	return s3blob.New(c, bucket, prefix, &s3blob.Options{MaxSize: evidence.MaxBlob}), nil
}

type evidenceVerifyOptions struct {
	evidenceCrossFlags
	trusted string
}

func (o *evidenceVerifyOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.trusted, "trusted", "", "`file` holding a signed checkpoint verified before, which the log must still contain")
}

func (o *evidenceVerifyOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	b, v, err := o.open(ctx, a)
	if err != nil {
		return err
	}
	var opts evidence.VerifyOptions
	if o.trusted != "" {
		if opts.Trusted, err = os.ReadFile(o.trusted); err != nil {
			return err
		}
	}
	r, err := evidence.Verify(ctx, b, v, opts)
	if err != nil {
		return err
	}
	if r.Latest == nil && r.OK() {
		return fmt.Errorf("%s: no checkpoint: not an evidence log, or an empty one", o.log)
	}
	if r.Latest != nil {
		fmt.Fprintf(a.stdout, "%s: log %s, %d checkpoints, newest of size %d; %d events checked\n", o.log, r.Latest.Origin, r.Checkpoints, r.Latest.Size, r.Leaves)
	}
	if o.cross {
		cr, err := o.checkRecords(ctx, a, b, v)
		if err != nil {
			return err
		}
		r.Problems = append(r.Problems, cr...)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(a.stdout, "MISMATCH %s\n", p)
	}
	if !r.OK() {
		return fmt.Errorf("%d mismatches: the log does not verify", len(r.Problems))
	}
	fmt.Fprintln(a.stdout, "ok")
	return nil
}

type evidenceProofOptions struct {
	evidenceLogFlags
	event, out string
}

func (o *evidenceProofOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.event, "event", "", "the event's `ID`")
	fs.StringVar(&o.out, "out", "", "write the proof to `file` instead of stdout")
}

func (o *evidenceProofOptions) run(ctx context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.event == "" {
		return usagef("--event is required")
	}
	b, v, err := o.open(ctx, a)
	if err != nil {
		return err
	}
	p, err := evidence.Prove(ctx, b, v, o.event)
	if err != nil {
		return err
	}
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	out = append(out, '\n')
	if o.out == "" {
		_, err = a.stdout.Write(out)
		return err
	}
	if err := writeFileAtomic(o.out, bytes.NewReader(out)); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "proof of event %s (leaf %d) written to %s\n", o.event, p.Index, o.out)
	return nil
}

type evidenceCheckProofOptions struct{ key string }

func (o *evidenceCheckProofOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.key, "key", "", "`file` holding the log's note verifier key")
}

func (o *evidenceCheckProofOptions) run(_ context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("want one proof FILE")
	}
	if o.key == "" {
		return usagef("--key is required")
	}
	v, err := evidence.LoadVerifier(o.key)
	if err != nil {
		return err
	}
	f, err := os.Open(args[0])
	if err != nil {
		return err
	}
	defer f.Close()
	// CheckProof refuses a file this large; the limit bounds the read.
	file, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return err
	}
	e, cp, err := evidence.CheckProof(file, v)
	if err != nil {
		return fmt.Errorf("%s: %w", args[0], err)
	}
	fmt.Fprintf(a.stdout, "ok: event %s (%s of %s, %s) is in log %s, signed at size %d\n",
		e.ID, e.Type, evidence.CopyID(e.Object), e.Time, cp.Origin, cp.Size)
	return nil
}
