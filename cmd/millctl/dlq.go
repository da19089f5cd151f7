package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/millfleet/mill/internal/progress"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/claimcheck"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// How the dlq commands read the dead-letter queue. SQS has no way to look at
// a message without receiving it, so they receive with a short visibility
// timeout (--hold) and make what they looked at visible again when they are
// done (or, if millctl dies, SQS does when --hold runs out). While a scan
// goes on, the messages already looked at are kept invisible by extending
// their visibility every --hold/2, so a scan longer than --hold does not
// see them again. The trade-offs: while a command runs, the messages it
// holds are invisible to any other reader of the dead-letter queue (workman
// never reads it); each look adds one to a message's
// ApproximateReceiveCount (harmless: the dead-letter queue has no redrive
// policy); after a crash the messages stay hidden for up to --hold; and on
// a very large queue SQS's sampling makes a listing approximate. A scan ends
// when a receive (1 s wait, which SQS answers authoritatively) brings
// nothing new.
const dlqDefaultHold = 30 * time.Second

func init() {
	register(&command{
		name:    "dlq list",
		summary: "list dead-lettered tasks (without consuming them)",
		usage: `List the messages on the dead-letter queue: message ID, task type, source
queue, attempts, when it failed, and the error (cut to --width). Filters:
--type, --error (substring, case-insensitive), --source (queue name or key).
The queue is read without consuming it: messages are received with a short
visibility timeout (--hold) and made visible again afterwards.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			limit := fs.Int("limit", 100, "list at most `n` matching messages (0 = all)")
			width := fs.Int("width", 60, "cut errors to `n` characters (0 = no limit)")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				s, err := e.scanner(ctx)
				if err != nil {
					return err
				}
				defer s.releaseAll()
				var rows []*dlqEntry
				for *limit == 0 || len(rows) < *limit {
					batch, err := s.next(ctx)
					if err != nil {
						return err
					}
					if batch == nil {
						break
					}
					for _, en := range batch {
						if e.filter.match(en) && (*limit == 0 || len(rows) < *limit) {
							rows = append(rows, en)
						}
					}
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTYPE\tSOURCE\tATTEMPTS\tFAILED\tERROR")
				for _, en := range rows {
					d := en.dl
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", en.msg.ID, orDash(string(d.TaskType)), orDash(d.SourceQueue),
						d.Attempts, fmtTime(d.Time), oneLine(d.Error, *width))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "%d matching of %d looked at\n", len(rows), s.looked)
				return nil
			}
		},
	})
	register(&command{
		name:    "dlq show",
		summary: "show one dead-lettered task in full",
		usage: `Show one message of the dead-letter queue (by its ID as dlq list prints it,
or the ID the task had on its source queue): the dead-letter metadata, the
original task decoded, and the original body.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usagef("want one message ID")
				}
				s, err := e.scanner(ctx)
				if err != nil {
					return err
				}
				defer s.releaseAll()
				for {
					batch, err := s.next(ctx)
					if err != nil {
						return err
					}
					if batch == nil {
						return fmt.Errorf("no message %s on %s (%d looked at)", args[0], s.q.Name(), s.looked)
					}
					for _, en := range batch {
						if en.msg.ID == args[0] || (en.dl.MessageID != "" && en.dl.MessageID == args[0]) {
							printDeadLetter(e, en)
							return nil
						}
					}
				}
			}
		},
	})
	register(&command{
		name:    "dlq redrive",
		summary: "send dead-lettered tasks back to their source queues",
		usage: `Send each matching message of the dead-letter queue back to the queue it
failed on — its original body, with attempts reset to 0 unless
--keep-attempts — and only then delete it from the dead-letter queue: a
crash in between duplicates a task, it never loses one. Messages the SQS
redrive policy moved (not in Mill's dead-letter form) carry no source queue
and are skipped unless --to names one. --rate limits sends per second;
--dry-run only says what would be sent. On a terminal a progress bar shows
the way, otherwise a log line per batch.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			keep := fs.Bool("keep-attempts", false, "send the tasks with their attempts as they were")
			dryRun := fs.Bool("dry-run", false, "print what would be redriven; change nothing")
			rate := fs.Float64("rate", 0, "send at most `n` messages per second (0 = no limit)")
			to := fs.String("to", "", "queue `key` or name for messages without a source queue")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				if *rate < 0 {
					return usagef("--rate must not be negative")
				}
				r := &redriver{e: e, keep: *keep, dryRun: *dryRun, rate: *rate, to: *to}
				return r.run(ctx)
			}
		},
	})
	register(&command{
		name:    "dlq purge",
		summary: "delete dead-lettered tasks (all, or those matching filters)",
		usage: `Delete messages from the dead-letter queue. Without filters the whole queue
is purged (SQS PurgeQueue); with --type, --error or --source only matching
messages are deleted. Asks for confirmation on stdin unless --yes.`,
		flags: func(fs *flag.FlagSet, a *app) func(context.Context, []string) error {
			e := dlqFlags(fs, a)
			yes := fs.Bool("yes", false, "do not ask for confirmation")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected arguments: %q", args)
				}
				return purge(ctx, e, *yes)
			}
		},
	})
}

// dlqEnv is what the dlq commands share.
type dlqEnv struct {
	a      *app
	prefix *string
	name   *string
	hold   *time.Duration
	filter dlqFilter
	claims *wiring.Claims
}

func dlqFlags(fs *flag.FlagSet, a *app) *dlqEnv {
	e := &dlqEnv{a: a, prefix: queuePrefixFlag(fs)}
	e.name = fs.String("dead-letter-queue", "", "dead-letter queue `name` (default: the prefix + dead-letter)")
	e.hold = fs.Duration("hold", dlqDefaultHold, "visibility timeout of messages looked at (they are released when done)")
	fs.StringVar(&e.filter.typ, "type", "", "only tasks of this `type` (DUP, BIT, …)")
	fs.StringVar(&e.filter.err, "error", "", "only tasks whose error contains `text` (case-insensitive)")
	fs.StringVar(&e.filter.source, "source", "", "only tasks from this source queue (`key` or name)")
	e.filter.prefix = e.prefix
	e.claims = wiring.ClaimsFlags(fs)
	return e
}

// dlqFilter selects dead letters.
type dlqFilter struct {
	typ, err, source string
	prefix           *string
}

func (f dlqFilter) empty() bool { return f.typ == "" && f.err == "" && f.source == "" }

func (f dlqFilter) match(en *dlqEntry) bool {
	d := en.dl
	if f.typ != "" && !strings.EqualFold(string(d.TaskType), f.typ) {
		return false
	}
	if f.err != "" && !strings.Contains(strings.ToLower(d.Error), strings.ToLower(f.err)) {
		return false
	}
	if f.source != "" && d.SourceQueue != f.source && d.SourceQueue != queue.Name(*f.prefix, f.source) {
		return false
	}
	return true
}

// dlqEntry is one message looked at. dl is always set: for a message not in
// Mill's dead-letter form (moved by the SQS redrive policy) it has only the
// body, and plain is true.
type dlqEntry struct {
	msg   *queue.Message
	dl    *workman.DeadLetter
	plain bool
}

// dlqScanner receives every message of the dead-letter queue once, holding
// each for the hold time.
type dlqScanner struct {
	api *sqs.Client
	s3  *s3.Client
	// q is the dead-letter queue itself (the scan receives from it with
	// its own hold); store is q behind the claim check, which resolves
	// claim-checked bodies and deletes their blobs with the messages.
	q      *sqsqueue.Queue
	store  queue.Queue
	claims *wiring.Claims
	warn   io.Writer
	hold   time.Duration
	seen   map[string]bool
	held   map[string]*queue.Message
	looked int
	// extended is when the held messages' visibility was last extended.
	extended time.Time
}

func (e *dlqEnv) deadLetterName() string {
	if *e.name != "" {
		return *e.name
	}
	return queue.Name(*e.prefix, queue.KeyDeadLetter)
}

func (e *dlqEnv) scanner(ctx context.Context) (*dlqScanner, error) {
	if *e.hold < time.Second || *e.hold > queue.MaxVisibility {
		return nil, usagef("--hold %v: want 1s to %v", *e.hold, queue.MaxVisibility)
	}
	cfg, err := e.a.awsConfig(ctx)
	if err != nil {
		return nil, err
	}
	api, s3c := cfg.SQS(), cfg.S3()
	q, err := sqsqueue.Open(ctx, api, e.deadLetterName(), sqsqueue.Config{})
	if err != nil {
		return nil, err
	}
	return &dlqScanner{api: api, s3: s3c, claims: e.claims, q: q, store: e.claims.Wrap(q, s3c), warn: e.a.stderr, hold: *e.hold, seen: map[string]bool{}, held: map[string]*queue.Message{}}, nil
}

// next returns the messages of the next receive not seen before; nil when
// the scan is over.
func (s *dlqScanner) next(ctx context.Context) ([]*dlqEntry, error) {
	if err := s.extend(ctx); err != nil {
		return nil, err
	}
	out, err := s.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:            aws.String(s.q.URL()),
		MaxNumberOfMessages: queue.MaxBatch,
		WaitTimeSeconds:     1,
		VisibilityTimeout:   int32(s.hold / time.Second),
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{
			sqstypes.MessageSystemAttributeNameApproximateReceiveCount, sqstypes.MessageSystemAttributeNameSentTimestamp,
		},
		MessageAttributeNames: []string{"All"},
	})
	if err != nil {
		return nil, fmt.Errorf("receive from %s: %w", s.q.Name(), err)
	}
	var batch []*dlqEntry
	for _, m := range out.Messages {
		qm := &queue.Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: []byte(aws.ToString(m.Body))}
		qm.ReceiveCount, _ = strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
		if ms, err := strconv.ParseInt(m.Attributes[string(sqstypes.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			qm.SentAt = time.UnixMilli(ms)
		}
		for k, v := range m.MessageAttributes {
			if v.StringValue != nil {
				if qm.Attributes == nil {
					qm.Attributes = map[string]string{}
				}
				qm.Attributes[k] = *v.StringValue
			}
		}
		s.held[qm.ID] = qm // the newest receipt handle is the one that releases
		if s.seen[qm.ID] {
			continue
		}
		s.seen[qm.ID] = true
		// Resolve a claim-checked body once, on first sight.
		if cq, ok := s.store.(*claimcheck.Queue); ok {
			if err := cq.Resolve(ctx, qm); err != nil {
				return nil, err
			}
			if err := claimcheck.Unresolved(qm); err != nil {
				fmt.Fprintf(s.warn, "dlq: %v\n", err)
			}
		}
		s.looked++
		en := &dlqEntry{msg: qm}
		en.dl, err = workman.DecodeDeadLetter(qm)
		if err != nil {
			en.dl, en.plain = &workman.DeadLetter{Body: qm.Body, Error: err.Error()}, true
			if t, terr := task.Decode(qm.Body); terr == nil {
				en.dl.TaskType, en.dl.Attempts = t.Type, t.Attempts
			}
		}
		batch = append(batch, en)
	}
	if len(batch) == 0 {
		return nil, nil
	}
	return batch, nil
}

// extend keeps the held messages invisible for another hold once half of
// it has passed.
func (s *dlqScanner) extend(ctx context.Context) error {
	now := time.Now()
	if len(s.held) == 0 || now.Sub(s.extended) < s.hold/2 {
		if len(s.held) == 0 {
			s.extended = now
		}
		return nil
	}
	var ch []queue.VisibilityChange
	for _, m := range s.held {
		ch = append(ch, queue.VisibilityChange{Message: m, Timeout: s.hold})
	}
	s.extended = now
	if err := s.q.ChangeVisibility(ctx, ch...); err != nil && !errors.Is(err, queue.ErrReceiptInvalid) {
		return fmt.Errorf("keep held messages invisible: %w", err)
	}
	return nil
}

// forget drops a message that was deleted from the held set.
func (s *dlqScanner) forget(ids ...string) {
	for _, id := range ids {
		delete(s.held, id)
	}
}

// releaseAll makes every held message visible again (it outlives the
// command's context: ^C must still release).
func (s *dlqScanner) releaseAll() {
	if len(s.held) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.q.Release(ctx, slices.Collect(maps.Values(s.held))...)
	s.held = map[string]*queue.Message{}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine puts s on one line and cuts it to n runes (0 = no limit).
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); n > 0 && len(r) > n {
		return string(r[:max(n-1, 0)]) + "…"
	}
	return orDash(s)
}

func printDeadLetter(e *dlqEnv, en *dlqEntry) {
	w := e.a.stdout
	d := en.dl
	form := en.msg.Attributes[workman.AttrForm]
	if en.plain {
		form = "none (moved by the SQS redrive policy, or not from Mill)"
	} else if form == "" {
		form = workman.FormEnvelope
	}
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	for _, kv := range [][2]string{
		{"message id", en.msg.ID},
		{"form", form},
		{"reason", orDash(d.Reason)},
		{"task type", orDash(string(d.TaskType))},
		{"processor", orDash(d.Processor)},
		{"source queue", orDash(d.SourceQueue)},
		{"attempts", strconv.Itoa(d.Attempts)},
		{"worker", orDash(d.Worker)},
		{"failed at", fmtTime(d.Time)},
		{"source message id", orDash(d.MessageID)},
		{"source receives", strconv.Itoa(d.ReceiveCount)},
		{"dead-lettered at", fmtTime(en.msg.SentAt)},
		{"dlq receives", strconv.Itoa(en.msg.ReceiveCount)},
	} {
		fmt.Fprintf(tw, "%s:\t%s\n", kv[0], kv[1])
	}
	_ = tw.Flush()
	if !en.plain {
		fmt.Fprintf(w, "error:\n  %s\n", strings.ReplaceAll(d.Error, "\n", "\n  "))
	}
	if t, err := task.Decode(d.Body); err == nil {
		fmt.Fprintf(w, "task (%s):\n  type: %s\n  attempts: %d\n", task.DetectFormat(d.Body), t.Type, t.Attempts)
		for _, k := range slices.Sorted(maps.Keys(t.Props)) {
			fmt.Fprintf(w, "  %s=%s\n", k, t.Props[k])
		}
	} else {
		fmt.Fprintf(w, "task: not decodable: %v\n", err)
	}
	fmt.Fprintf(w, "body:\n  %s\n", strings.ReplaceAll(string(d.Body), "\n", "\n  "))
}

// redriver carries out dlq redrive.
type redriver struct {
	e            *dlqEnv
	keep, dryRun bool
	rate         float64
	to           string

	targets map[string]queue.Queue
	start   time.Time
	sent    int
}

// redriveStats is the summary of a redrive.
type redriveStats struct {
	redriven, failed, skipped, notMatching int
}

func (r *redriver) run(ctx context.Context) error {
	s, err := r.e.scanner(ctx)
	if err != nil {
		return err
	}
	defer s.releaseAll()
	r.targets = map[string]queue.Queue{}
	r.start = time.Now()
	a := r.e.a
	var bar *progress.Bar
	if !r.dryRun && isTerminal(a.stderr) {
		total := 0
		if r.e.filter.empty() {
			if d, err := s.q.Depth(ctx); err == nil {
				total = int(d.Visible + d.InFlight)
			}
		}
		bar = progress.New(a.stderr, "redrive", total)
	}
	var st redriveStats
	var errs []error
	for {
		batch, err := s.next(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		if batch == nil {
			break
		}
		byTarget := map[string][]*dlqEntry{}
		var order []string
		for _, en := range batch {
			if !r.e.filter.match(en) {
				st.notMatching++
				continue
			}
			if err := claimcheck.Unresolved(en.msg); err != nil {
				// Re-sending the reference alone would only make an
				// undecodable task; it stays here.
				st.failed++
				errs = append(errs, fmt.Errorf("not redriven: %w", err))
				continue
			}
			target := en.dl.SourceQueue
			if en.plain || target == "" {
				target = r.to
				if target != "" && !strings.HasPrefix(target, *r.e.prefix) {
					target = queue.Name(*r.e.prefix, target)
				}
			}
			if target == "" {
				st.skipped++
				a.logger.Warn("skipped: no source queue (use --to)", "id", en.msg.ID)
				continue
			}
			if _, ok := byTarget[target]; !ok {
				order = append(order, target)
			}
			byTarget[target] = append(byTarget[target], en)
		}
		for _, target := range order {
			ens := byTarget[target]
			if r.dryRun {
				for _, en := range ens {
					fmt.Fprintf(a.stdout, "would redrive %s %s → %s\n", en.msg.ID, orDash(string(en.dl.TaskType)), target)
				}
				st.redriven += len(ens)
				continue
			}
			n, err := r.send(ctx, s, target, ens)
			st.redriven += n
			st.failed += len(ens) - n
			if err != nil {
				errs = append(errs, err)
			}
			if bar != nil {
				bar.Add(len(ens))
			} else {
				a.logger.Info("redriven", "queue", target, "messages", n, "failed", len(ens)-n, "total", st.redriven)
			}
		}
		if ctx.Err() != nil {
			errs = append(errs, ctx.Err())
			break
		}
	}
	if bar != nil {
		bar.Finish()
	}
	verb := "redriven"
	if r.dryRun {
		verb = "would be redriven"
	}
	fmt.Fprintf(a.stdout, "redrive: %d %s, %d failed, %d skipped (no source queue), %d not matching, in %v\n",
		st.redriven, verb, st.failed, st.skipped, st.notMatching, time.Since(r.start).Round(time.Millisecond))
	return errors.Join(errs...)
}

// send puts the original bodies on target, then deletes from the
// dead-letter queue those that were sent, and returns how many were.
func (r *redriver) send(ctx context.Context, s *dlqScanner, target string, ens []*dlqEntry) (int, error) {
	q, ok := r.targets[target]
	if !ok {
		var err error
		if q, err = s.claims.Open(ctx, s.api, s.s3, target, sqsqueue.Config{}); err != nil {
			return 0, fmt.Errorf("source queue: %w", err)
		}
		r.targets[target] = q
	}
	entries := make([]queue.SendEntry, len(ens))
	for i, en := range ens {
		entries[i] = queue.SendEntry{Body: r.body(en.dl.Body)}
	}
	if err := r.wait(ctx, len(entries)); err != nil {
		return 0, err
	}
	sendErr := q.Send(ctx, entries...)
	failed := map[int]bool{}
	for _, i := range queue.FailedIndexes(sendErr, len(entries)) {
		failed[i] = true
	}
	var done []*queue.Message
	var ids []string
	for i, en := range ens {
		if !failed[i] {
			done = append(done, s.held[en.msg.ID])
			ids = append(ids, en.msg.ID)
		}
	}
	r.sent += len(done)
	if len(done) == 0 {
		return 0, fmt.Errorf("send to %s: %w", target, sendErr)
	}
	// Sent: now delete. A failed delete leaves a duplicate on the
	// dead-letter queue, never a loss.
	delErr := s.store.Delete(ctx, done...)
	s.forget(ids...)
	if delErr != nil {
		delErr = fmt.Errorf("sent to %s but not deleted from the dead-letter queue (they will show up again): %w", target, delErr)
	}
	if sendErr != nil {
		sendErr = fmt.Errorf("send to %s: %w", target, sendErr)
	}
	return len(done), errors.Join(sendErr, delErr)
}

// body is what a redrive sends: the original body, with attempts reset to 0
// in the task's own format unless --keep-attempts (or it is not a task).
func (r *redriver) body(b []byte) []byte {
	if r.keep {
		return b
	}
	t, err := task.Decode(b)
	if err != nil || t.Attempts == 0 {
		return b
	}
	t.Attempts = 0
	nb, err := task.Encode(t, task.DetectFormat(b))
	if err != nil {
		return b
	}
	return nb
}

// wait holds back n more sends until the rate allows them.
func (r *redriver) wait(ctx context.Context, n int) error {
	if r.rate <= 0 {
		return nil
	}
	due := r.start.Add(time.Duration(float64(r.sent+n) / r.rate * float64(time.Second)))
	d := time.Until(due)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// purge carries out dlq purge.
func purge(ctx context.Context, e *dlqEnv, yes bool) error {
	a := e.a
	s, err := e.scanner(ctx)
	if err != nil {
		return err
	}
	if e.filter.empty() {
		d, err := s.q.Depth(ctx)
		if err != nil {
			return err
		}
		if !yes && !confirm(a, fmt.Sprintf("Purge all %d messages of %s?", d.Total(), s.q.Name())) {
			fmt.Fprintln(a.stdout, "purge: cancelled, nothing deleted")
			return nil
		}
		if _, err := s.api.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(s.q.URL())}); err != nil {
			return fmt.Errorf("purge %s: %w", s.q.Name(), err)
		}
		fmt.Fprintf(a.stdout, "purge: %s purged (about %d messages; SQS may take up to a minute)\n", s.q.Name(), d.Total())
		return nil
	}
	defer s.releaseAll()
	var match []*dlqEntry
	for {
		batch, err := s.next(ctx)
		if err != nil {
			return err
		}
		if batch == nil {
			break
		}
		for _, en := range batch {
			if e.filter.match(en) {
				match = append(match, en)
			}
		}
	}
	if len(match) == 0 {
		fmt.Fprintf(a.stdout, "purge: no matching messages (%d looked at)\n", s.looked)
		return nil
	}
	if !yes && !confirm(a, fmt.Sprintf("Delete %d matching messages of %s (of %d looked at)?", len(match), s.q.Name(), s.looked)) {
		fmt.Fprintln(a.stdout, "purge: cancelled, nothing deleted")
		return nil
	}
	msgs := make([]*queue.Message, len(match))
	ids := make([]string, len(match))
	for i, en := range match {
		msgs[i], ids[i] = s.held[en.msg.ID], en.msg.ID
	}
	err = s.store.Delete(ctx, msgs...)
	failed := len(queue.FailedIndexes(err, len(msgs)))
	s.forget(ids...)
	fmt.Fprintf(a.stdout, "purge: %d deleted, %d failed\n", len(msgs)-failed, failed)
	return err
}

// confirm asks question on stderr and reads y/yes from stdin.
func confirm(a *app, question string) bool {
	fmt.Fprintf(a.stderr, "%s [y/N] ", question)
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}
