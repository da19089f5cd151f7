package task

import (
	"maps"
	"slices"
	"strconv"

	"github.com/millfleet/mill/internal/base/shortid"
)

// Type names a kind of task. The names are DuraCloud's, so operators and
// existing tools recognise them on the queues.
type Type string

// Task types (docs/ARCHITECTURE.md, Tasks and wire formats).
const (
	TypeDup       Type = "DUP"
	TypeBit       Type = "BIT"
	TypeBitReport Type = "BIT_REPORT"
	TypeBitError  Type = "BIT_ERROR"
	TypeAudit     Type = "AUDIT"
	TypeNoop      Type = "NOOP"
	// TypeStorageStats counts the items and bytes of one space (the Java
	// Mill's STORAGE_STATS).
	TypeStorageStats Type = "STORAGE_STATS"
)

// Types lists every known task type.
var Types = []Type{TypeDup, TypeBit, TypeBitReport, TypeBitError, TypeAudit, TypeNoop, TypeStorageStats}

// Known reports whether t is one of Types.
func (t Type) Known() bool { return slices.Contains(Types, t) }

// Property keys shared by several task types (DuraCloud's names).
const (
	KeyAccount   = "account"
	KeyStoreID   = "storeId"
	KeySpaceID   = "spaceId"
	KeyContentID = "contentId"
)

// Task is one unit of work as it travels on a queue: a type, the number of
// completed failed attempts, and string properties. Typed views (Dup, Bit, …)
// convert to and from the property map; properties a view does not know are
// kept, so they survive a round trip.
type Task struct {
	Type     Type
	Attempts int
	Props    map[string]string
}

// New returns a task of type t with a copy of props.
func New(t Type, props map[string]string) *Task {
	p := make(map[string]string, len(props))
	maps.Copy(p, props)
	return &Task{Type: t, Props: p}
}

// Get returns the property k, or "" when it is not set.
func (t *Task) Get(k string) string {
	if t == nil || t.Props == nil {
		return ""
	}
	return t.Props[k]
}

// RunID returns the producer run the task claims to belong to (KeyRunID;
// "" for none). It is a claim: pkg/runs counts it only for a run a
// producer recorded.
func (t *Task) RunID() string { return t.Get(KeyRunID) }

// Set sets property k to v.
func (t *Task) Set(k, v string) {
	if t.Props == nil {
		t.Props = map[string]string{}
	}
	t.Props[k] = v
}

// Clone returns a deep copy of t.
func (t *Task) Clone() *Task {
	c := *t
	c.Props = maps.Clone(t.Props)
	if c.Props == nil {
		c.Props = map[string]string{}
	}
	return &c
}

// LogAttrs returns the identifying properties of t as slog key/value pairs
// (task_type, attempts, account, store_id, space_id, content_id), omitting
// empty ones; long IDs are shortened (shortid.Short, as storage.ShortID).
func (t *Task) LogAttrs() []any {
	out := []any{"task_type", string(t.Type), "attempts", t.Attempts}
	for _, kv := range [][2]string{{"account", KeyAccount}, {"store_id", KeyStoreID}, {"space_id", KeySpaceID}, {"content_id", KeyContentID}} {
		if v := t.Get(kv[1]); v != "" {
			out = append(out, kv[0], shortid.Short(v))
		}
	}
	return out
}

// String is a short human description used in errors.
func (t *Task) String() string {
	s := string(t.Type) + " attempts=" + strconv.Itoa(t.Attempts)
	for _, k := range []string{KeyAccount, KeyStoreID, KeySpaceID, KeyContentID} {
		if v := t.Get(k); v != "" {
			s += " " + k + "=" + shortid.Quote(v)
		}
	}
	return s
}
