package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/queue/sqsqueue"
	"github.com/millfleet/mill/pkg/task"
)

// defaultQueueKey is the queue a task type goes to unless --queue says
// otherwise (NOOP has none: it must be given).
var defaultQueueKey = map[task.Type]string{
	task.TypeDup:       queue.KeyDupHigh,
	task.TypeBit:       queue.KeyBit,
	task.TypeBitReport: queue.KeyBitReport,
	task.TypeBitError:  queue.KeyBitError,
	task.TypeAudit:     queue.KeyAudit,
	// STORAGE_STATS travels on the bit queue (docs/ARCHITECTURE.md, Queues).
	task.TypeStorageStats: queue.KeyBit,
}

// taskViews read a task of each known type through its typed view.
var taskViews = map[task.Type]func(*task.Task) error{
	task.TypeDup:          view(task.DupFrom),
	task.TypeBit:          view(task.BitFrom),
	task.TypeBitReport:    view(task.BitReportFrom),
	task.TypeBitError:     view(task.BitErrorFrom),
	task.TypeAudit:        view(task.AuditFrom),
	task.TypeNoop:         view(task.NoopFrom),
	task.TypeStorageStats: view(task.StorageStatsFrom),
}

func view[V any](from func(*task.Task) (V, error)) func(*task.Task) error {
	return func(t *task.Task) error {
		_, err := from(t)
		return err
	}
}

// validateTask checks a task of a known type through its typed view.
func validateTask(t *task.Task) error {
	if v, ok := taskViews[t.Type]; ok {
		return v(t)
	}
	return nil
}

const enqueueUsage = `Send tasks to a queue. Either one task from flags:

  millctl enqueue --type DUP --prop account=a --prop storeId=1 --prop destStoreId=2 --prop spaceId=s

or the tasks in files (arguments; "-" is stdin): JSON lines of
{"type":"DUP","props":{…}} (an optional "attempts" too), or one encoded
message per file (Mill's JSON envelope or DuraCloud's .properties text).
Tasks of known types are checked through their typed views. The queue is
--queue (a key such as dup-low, or a full name), by default the type's own:
DUP → dup-high, BIT → bit, BIT_REPORT → bit-report, BIT_ERROR → bit-error,
AUDIT → audit, STORAGE_STATS → bit; NOOP needs --queue. --count N sends every task N times (a
load test); NOOP copies get the property id=<id or "noop">-<n>.`

// enqueueOptions are the options of enqueue.
type enqueueOptions struct {
	prefix, typ, queue string
	format             *wiring.WireFormat
	props              propsFlag
	count              int
	delay              time.Duration
	claims             *wiring.Claims
	tracing            *wiring.Tracing
}

func (o *enqueueOptions) define(fs *flag.FlagSet, _ *app) {
	wiring.QueuePrefixVar(fs, &o.prefix)
	fs.StringVar(&o.typ, "type", "", "task `type` (DUP, BIT, BIT_REPORT, BIT_ERROR, AUDIT, STORAGE_STATS, NOOP)")
	o.props = propsFlag{}
	fs.Var(o.props, "prop", "task property `key=value` (repeat)")
	fs.StringVar(&o.queue, "queue", "", "queue `key` or name (default: by task type)")
	fs.IntVar(&o.count, "count", 1, "send each task `n` times")
	fs.DurationVar(&o.delay, "delay", 0, "deliver after this `delay` (at most 15m)")
	o.format = wiring.WireFormatFlag(fs)
	o.claims = wiring.ClaimsFlags(fs)
	o.tracing = wiring.TracingFlag(fs)
}

func (o *enqueueOptions) run(ctx context.Context, a *app, args []string) error {
	f, err := o.format.Parse()
	if err != nil {
		return usagef("%v", err)
	}
	if o.count < 1 {
		return usagef("--count must be at least 1")
	}
	if err := queue.CheckDelay(o.delay); err != nil {
		return usagef("--delay: %v", err)
	}
	tasks, err := o.tasks(a, args)
	if err != nil {
		return err
	}
	byQueue, order, err := o.encode(tasks, f)
	if err != nil {
		return err
	}
	return o.send(ctx, a, byQueue, order)
}

// tasks are the tasks to send: the one of --type and --prop, or those of
// the files args names.
func (o *enqueueOptions) tasks(a *app, args []string) ([]*task.Task, error) {
	switch {
	case o.typ != "" && len(args) > 0:
		return nil, usagef("give --type or files, not both")
	case o.typ != "":
		return []*task.Task{task.New(task.Type(strings.ToUpper(o.typ)), o.props)}, nil
	case len(args) > 0:
		if len(o.props) > 0 {
			return nil, usagef("--prop goes with --type")
		}
		var tasks []*task.Task
		for _, p := range args {
			ts, err := readTaskFile(a, p)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, ts...)
		}
		return tasks, nil
	default:
		return nil, usagef("give --type or task files")
	}
}

// encode checks every task and encodes its --count copies, grouped by
// queue (in the order the queues first appear), before any is sent.
func (o *enqueueOptions) encode(tasks []*task.Task, f task.Format) (map[string][]queue.SendEntry, []string, error) {
	byQueue := map[string][]queue.SendEntry{}
	var order []string
	for i, t := range tasks {
		if !t.Type.Known() {
			return nil, nil, fmt.Errorf("task %d: unknown type %q (known: %v)", i+1, t.Type, task.Types)
		}
		if err := validateTask(t); err != nil {
			return nil, nil, fmt.Errorf("task %d: %w", i+1, err)
		}
		name := o.queue
		if name == "" {
			key, ok := defaultQueueKey[t.Type]
			if !ok {
				return nil, nil, usagef("%s tasks have no default queue: give --queue", t.Type)
			}
			name = key
		}
		if !strings.HasPrefix(name, o.prefix) {
			name = queue.Name(o.prefix, name)
		}
		for n := range o.count {
			tn := o.copyOf(t, n)
			body, err := task.Encode(tn, f)
			if err != nil {
				return nil, nil, fmt.Errorf("task %d: %w", i+1, err)
			}
			if _, ok := byQueue[name]; !ok {
				order = append(order, name)
			}
			byQueue[name] = append(byQueue[name], queue.SendEntry{Body: body, Delay: o.delay, Group: queue.GroupFor(tn.Get(task.KeyAccount))})
		}
	}
	return byQueue, order, nil
}

// copyOf is the n-th copy (from 0) of t: t itself, but a NOOP task sent
// --count times gets the property id=<id or "noop">-<n+1>.
func (o *enqueueOptions) copyOf(t *task.Task, n int) *task.Task {
	if o.count <= 1 || t.Type != task.TypeNoop {
		return t
	}
	c := t.Clone()
	base := t.Get("id")
	if base == "" {
		base = "noop"
	}
	c.Set("id", base+"-"+strconv.Itoa(n+1))
	return c
}

// send sends each queue's messages, reporting each queue on stdout.
func (o *enqueueOptions) send(ctx context.Context, a *app, byQueue map[string][]queue.SendEntry, order []string) error {
	cfg, err := a.awsConfig(ctx)
	if err != nil {
		return err
	}
	_, stopTracing, err := o.tracing.Install(ctx, "millctl", a.getenv, a.logger, cfg, o.claims)
	if err != nil {
		return err
	}
	defer stopTracing()
	api, s3c := cfg.SQS(), cfg.S3()
	start := time.Now()
	for _, name := range order {
		q, err := o.claims.Open(ctx, api, s3c, name, sqsqueue.Config{})
		if err != nil {
			return err
		}
		entries := byQueue[name]
		err = q.Send(ctx, entries...)
		failed := len(queue.FailedIndexes(err, len(entries)))
		fmt.Fprintf(a.stdout, "enqueue: %d sent to %s", len(entries)-failed, name)
		if failed > 0 {
			fmt.Fprintf(a.stdout, ", %d failed", failed)
		}
		fmt.Fprintf(a.stdout, " (%v)\n", time.Since(start).Round(time.Millisecond))
		if err != nil {
			return err
		}
	}
	return nil
}

// taskLine is one JSON line of a task file.
type taskLine struct {
	Type     string            `json:"type"`
	Attempts int               `json:"attempts"`
	Props    map[string]string `json:"props"`
}

// readTaskFile reads JSON lines of tasks, or one encoded message.
func readTaskFile(a *app, path string) ([]*task.Task, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(a.stdin)
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if trimmed := bytes.TrimSpace(b); len(trimmed) > 0 && trimmed[0] == '{' {
		if ts, lerr := taskLines(trimmed); lerr == nil {
			return ts, nil
		} else if t, derr := task.Decode(trimmed); derr == nil {
			return []*task.Task{t}, nil // a pretty-printed envelope
		} else {
			return nil, fmt.Errorf("%s: %w", path, lerr)
		}
	}
	t, err := task.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return []*task.Task{t}, nil
}

func taskLines(b []byte) ([]*task.Task, error) {
	var out []*task.Task
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		// A line in Mill's envelope ({"v":1,…}) is a message: decode it
		// as one, attempts and all.
		if bytes.Contains(line, []byte(`"v"`)) {
			if t, err := task.Decode(line); err == nil {
				out = append(out, t)
				continue
			}
		}
		var tl taskLine
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&tl); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if tl.Type == "" {
			return nil, fmt.Errorf("line %d: no type", n)
		}
		t := task.New(task.Type(strings.ToUpper(tl.Type)), tl.Props)
		t.Attempts = tl.Attempts
		out = append(out, t)
	}
	return out, sc.Err()
}
