package adversarial

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// Environment knobs of the randomized test.
const (
	seedVar  = "MILL_SAFETY_SEED"  // replay a run: the seed it printed
	tasksVar = "MILL_SAFETY_TASKS" // how many tasks (default defaultTasks)
)

const defaultTasks = 300

// forgedMark marks the run ids and descriptions of forged verdicts, so a
// record made from one is found.
const forgedMark = "forged"

// sent is one task the randomized test sent, and whether it was forged or
// malformed (it must be dead-lettered) or valid (it must not be).
type sent struct {
	kind   string
	forged bool
}

// TestRandomizedTasks seeds acme's source store with items and its two
// destinations with copies, stale copies and items the source lacks, sends
// a seeded random mix of valid, malformed and forged tasks across every
// work queue, and runs workman until the queues drain. Afterwards no
// source item is missing or changed, every destination item matches its
// source or is as it was, every destination item deleted or replaced is
// restorable, every forged or malformed task is dead-lettered, and no
// valid DUP or AUDIT task is.
func TestRandomizedTasks(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(seedVar); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedVar, s, err)
		}
		seed = v
	}
	n := defaultTasks
	if s := os.Getenv(tasksVar); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive number", tasksVar, s)
		}
		n = v
	}
	t.Logf("seed %d (%s=%d replays this run), %d tasks", seed, seedVar, seed, n)
	rng := rand.New(rand.NewPCG(seed, seed^0x5afe))

	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	start := time.Now()

	// The source: 24 items in two spaces. Each destination holds a copy,
	// a stale copy, or nothing, and a few items the source lacks.
	type key struct{ space, id string }
	spaces := []string{"photos", "docs"}
	source := map[key][]byte{}
	var keys []key
	for i := range 24 {
		k := key{spaces[i%2], fmt.Sprintf("dir %d/item-%02d.txt", i%3, i)}
		body := fmt.Appendf(nil, "source %s/%s seed %d: %x", k.space, k.id, seed, rng.Uint64())
		source[k] = body
		keys = append(keys, k)
		m.put("1", k.space, k.id, string(body))
	}
	before := map[string]map[key][]byte{"2": {}, "3": {}}
	for _, s := range []string{"2", "3"} {
		for _, k := range keys {
			switch rng.IntN(3) {
			case 0:
				before[s][k] = source[k]
			case 1:
				before[s][k] = fmt.Appendf(nil, "stale copy of %s/%s", k.space, k.id)
			}
		}
		for i := range 3 {
			k := key{spaces[i%2], fmt.Sprintf("orphan-%d", i)}
			before[s][k] = fmt.Appendf(nil, "only on store %s: %s", s, k.id)
			keys = append(keys, k)
		}
		for k, b := range before[s] {
			m.put(s, k.space, k.id, string(b))
		}
	}
	// Forged tasks' times come after the seed's writes as S3 keeps them.
	if d := time.Until(time.Now().Truncate(time.Second).Add(time.Second)); d > 0 {
		time.Sleep(d)
	}

	pick := func() key { return keys[rng.IntN(len(keys))] }
	dst := func() string { return []string{"2", "3"}[rng.IntN(2)] }
	type gen struct {
		kind   string
		queue  string
		forged bool
		make   func() string
	}
	gens := []gen{
		// Valid.
		{"DUP 1→dest", queue.KeyDupLow, false, func() string { k := pick(); return dup(t, "acme", "1", dst(), k.space, k.id) }},
		{"DUP 1→dest (high)", queue.KeyDupHigh, false, func() string { k := pick(); return dup(t, "acme", "1", dst(), k.space, k.id) }},
		{"space-level DUP", queue.KeyDupLow, false, func() string { return dup(t, "acme", "1", dst(), spaces[rng.IntN(2)], "") }},
		{"AUDIT ADD_CONTENT of a source item", queue.KeyAudit, false, func() string {
			k := keys[rng.IntN(24)]
			sum := md5.Sum(source[k])
			return audit(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: k.space, ContentID: k.id, Action: task.ActionAddContent,
				ContentChecksum: hex.EncodeToString(sum[:]), DateTime: time.Now()})
		}},
		{"BIT", queue.KeyBit, false, func() string {
			k := pick()
			return encode(t, task.Bit{Account: "acme", StoreID: []string{"1", "2", "3"}[rng.IntN(3)], SpaceID: k.space, ContentID: k.id}.Task())
		}},
		{"NOOP", queue.KeyBitReport, false, func() string { return fmt.Sprintf(`{"v":1,"type":"NOOP","props":{"id":"n%d"}}`, rng.Uint32()) }},
		// Forged.
		{"DUP dest→1", queue.KeyDupHigh, true, func() string { k := pick(); return dup(t, "acme", dst(), "1", k.space, k.id) }},
		{"DUP 2→3", queue.KeyDupLow, true, func() string { k := pick(); return dup(t, "acme", "2", "3", k.space, k.id) }},
		{"space-level DUP dest→1", queue.KeyDupLow, true, func() string { return dup(t, "acme", dst(), "1", spaces[rng.IntN(2)], "") }},
		{"DUP in a system space", queue.KeyDupHigh, true, func() string { k := pick(); return dup(t, "acme", "1", dst(), "x-"+k.space, k.id) }},
		{"AUDIT DELETE_CONTENT of a source item", queue.KeyAudit, true, func() string {
			k := keys[rng.IntN(24)]
			return audit(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: k.space, ContentID: k.id, Action: task.ActionDeleteContent, DateTime: time.Now()})
		}},
		{"AUDIT DELETE_SPACE of the source", queue.KeyAudit, true, func() string {
			return audit(t, task.Audit{Account: "acme", StoreID: "1", SpaceID: spaces[rng.IntN(2)], Action: task.ActionDeleteSpace, DateTime: time.Now()})
		}},
		{"S3 ObjectRemoved of a source item", queue.KeyAudit, true, func() string {
			k := keys[rng.IntN(24)]
			return s3Event("ObjectRemoved:Delete", m.bucket1, "mill/"+k.space+"/"+strings.ReplaceAll(k.id, " ", "+"), time.Now())
		}},
		{"BIT_ERROR repair", queue.KeyBitError, true, func() string {
			k := keys[rng.IntN(24)]
			return encode(t, task.BitError{Account: "acme", StoreID: "1", SpaceID: k.space, ContentID: k.id, Case: 2, InternallyResolvable: true,
				ContentChecksum: fmt.Sprintf("%032x", rng.Uint64())}.Task())
		}},
		// Forged verdicts: a report of a run the producer never started,
		// claiming nothing to check, and a bit error naming a case and
		// checksums of its own under a made-up run. Neither may become a
		// report, a bit-log row or a notification.
		{"BIT_REPORT of a made-up run claiming 0 items", queue.KeyBitReport, true, func() string {
			zero := int64(0)
			return encode(t, task.BitReport{Account: "acme", StoreID: []string{"1", "2", "3"}[rng.IntN(3)], SpaceID: spaces[rng.IntN(2)],
				RunID: fmt.Sprintf("%s-%d", forgedMark, rng.IntN(1e6)), Expected: &zero}.Task())
		}},
		{"BIT_ERROR of a made-up run and case", queue.KeyBitError, true, func() string {
			k := pick()
			return encode(t, task.BitError{Account: "acme", StoreID: dst(), SpaceID: k.space, ContentID: k.id, Case: 1 + rng.IntN(11),
				InternallyResolvable: rng.IntN(2) == 0, RunID: fmt.Sprintf("%s-%d", forgedMark, rng.IntN(1e6)),
				Description: "=HYPERLINK(\"x\") " + forgedMark, ContentChecksum: fmt.Sprintf("%032x", rng.Uint64()),
				StorageChecksum: fmt.Sprintf("%032x", rng.Uint64())}.Task())
		}},
		{"BIT_REPORT of an unknown account", queue.KeyBitReport, true, func() string {
			return encode(t, task.BitReport{Account: fmt.Sprintf("ghost-%d", rng.IntN(1000)), StoreID: "1", SpaceID: "photos"}.Task())
		}},
		// IDs no store accepts, and ".." segments toward the filesystem
		// store (S3 keys keep them literally, inside the store's prefix).
		{"hostile content ID", queue.KeyDupHigh, true, func() string {
			return dup(t, "acme", "1", dst(), spaces[rng.IntN(2)], []string{"a\x00b", "a\nb", strings.Repeat("z", 1100)}[rng.IntN(3)])
		}},
		{"escaping content ID", queue.KeyDupHigh, true, func() string {
			return dup(t, "acme", "1", "3", spaces[rng.IntN(2)], []string{"../../x", "a/../../b", "../" + strings.Repeat("../", rng.IntN(5)) + "etc/passwd"}[rng.IntN(3)])
		}},
		{"malformed", queue.KeyBit, true, func() string {
			return []string{`{"v":1,"type":"DUP","props":{`, `{"v":9,"type":"NOOP","props":{}}`, "type=BIT\naccount=acme\n", `{"v":1,"type":"BIT","props":{}}`}[rng.IntN(4)]
		}},
		{"unknown type", queue.KeyBitError, true, func() string { return fmt.Sprintf(`{"v":1,"type":"T%d","props":{}}`, rng.IntN(1e6)) }},
	}
	sentBy := map[string]sent{} // message ID → what was sent
	counts := map[string]int{}
	for range n {
		g := gens[rng.IntN(len(gens))]
		sentBy[m.send(g.queue, g.make(), nil)] = sent{kind: g.kind, forged: g.forged}
		counts[g.kind]++
	}
	t.Logf("sent %d tasks: %v", n, counts)

	w := m.startWorkman()
	forged := 0
	for _, s := range sentBy {
		if s.forged {
			forged++
		}
	}
	letters := m.deadLetters(forged, 3*time.Minute, w)
	t.Logf("%d dead letters in at %v", len(letters), time.Since(start).Round(time.Millisecond))
	if !m.drained(90*time.Second, w) {
		t.Errorf("the work queues did not drain")
	}
	letters = append(letters, m.deadLetters(1<<20, 2*time.Second, w)...)
	t.Logf("processed in %v", time.Since(start).Round(time.Millisecond))
	dead := map[string]*workman.DeadLetter{}
	reasons := map[string]int{}
	for _, d := range letters {
		dead[d.MessageID] = d
		reasons[d.Reason]++
		if d.Error == "" {
			t.Errorf("dead letter without an error: %+v", d)
		}
	}
	t.Logf("%d dead letters by reason: %v", len(letters), reasons)
	for id, s := range sentBy {
		d := dead[id]
		switch {
		case s.forged && d == nil:
			t.Errorf("forged or malformed task (%s) %s was not dead-lettered", s.kind, id)
		case !s.forged && d != nil && (strings.HasPrefix(s.kind, "DUP") || strings.HasPrefix(s.kind, "AUDIT") || strings.HasPrefix(s.kind, "space")):
			t.Errorf("valid task (%s) dead-lettered: %s: %.300s", s.kind, d.Reason, d.Error)
		}
	}
	w.alive(t)

	// No source item is missing or changed, and store 1 holds nothing else.
	for _, k := range keys[:24] {
		if b, err := m.read("1", k.space, k.id); err != nil || string(b) != string(source[k]) {
			t.Errorf("source item %s/%s: %q, %v", k.space, k.id, b, err)
		}
	}
	for _, sp := range spaces {
		ids, _, err := m.stores["1"].ListContent(ctx, sp, "", 1000)
		must(t, err)
		if len(ids) != 12 {
			t.Errorf("store 1 space %s holds %d items, want 12: %q", sp, len(ids), ids)
		}
	}
	// Every destination item matches its source or is as it was; every
	// item a destination held and no longer holds as it was is restorable.
	changed, restorable := 0, 0
	for _, s := range []string{"2", "3"} {
		rec := m.stores[s].(storage.Recoverer)
		for _, k := range keys {
			now, err := m.read(s, k.space, k.id)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("store %s %s/%s: %v", s, k.space, k.id, err)
				continue
			}
			was, held := before[s][k]
			src, inSource := source[k]
			switch {
			case err == nil && inSource && string(now) == string(src):
			case err == nil && held && string(now) == string(was):
			case err == nil:
				t.Errorf("store %s %s/%s holds %q: neither its source's bytes nor what it held", s, k.space, k.id, now)
			}
			if held && (err != nil || string(now) != string(was)) {
				changed++
				sum := md5.Sum(was)
				vs, verr := rec.Versions(ctx, k.space, k.id)
				must(t, verr)
				found := false
				for _, v := range vs {
					found = found || v.Info.Checksum == hex.EncodeToString(sum[:])
				}
				if !found {
					t.Errorf("store %s %s/%s: what it held (%q) was replaced or deleted and is not restorable (%d versions)", s, k.space, k.id, was, len(vs))
				} else {
					restorable++
				}
			}
		}
	}
	t.Logf("%d destination items replaced or deleted, %d of them restorable; done in %v", changed, restorable, time.Since(start).Round(time.Millisecond))

	// Nothing forged became a recorded fact: no run was started by the
	// producer, so there is no report and no report notification, and no
	// bit-log row carries a forged run id or description.
	blog := m.bitLog()
	reps, err := blog.Reports(ctx, bitlog.ReportFilter{Account: "acme"})
	must(t, err)
	if len(reps) != 0 {
		t.Errorf("%d bit reports written, want none (no run was started): %+v", len(reps), reps)
	}
	rows := 0
	for after := ""; ; {
		page, next, err := blog.Results(ctx, bitlog.Filter{Account: "acme", After: after, Limit: 1000})
		must(t, err)
		for _, r := range page {
			rows++
			if strings.Contains(r.RunID, forgedMark) || strings.Contains(r.Details, forgedMark) || strings.Contains(r.Details, "HYPERLINK") {
				t.Errorf("a bit-log row states what a forged message claimed: %+v", r)
			}
		}
		if next == "" {
			break
		}
		after = next
	}
	t.Logf("%d bit-log rows, none from a forged claim", rows)
	if out := w.Output(); strings.Contains(out, "Mill: bit report") {
		t.Errorf("a bit report was notified:\n%s", testbin.CutLines(out, 300))
	}
	if s := w.Output(); strings.Contains(s, "panic") || strings.Contains(s, "goroutine ") {
		t.Errorf("workman logged a panic")
	}
}
