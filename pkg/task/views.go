package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Typed views. Each task type has a struct that converts both ways:
//
//	XFrom(t *Task) (X, error) // checks the type and the properties
//	(x X) Task() *Task        // never fails
//
// for X in Dup, Bit, BitReport, BitError, Audit, StorageStats and Noop. A view carries the
// task's Attempts, and its Extra map keeps every property the view does not
// know, so t → view → Task() keeps them. An empty property is treated as
// absent: Task() writes only the non-empty ones, and XFrom reports a required
// property that is empty as missing. Errors from XFrom wrap ErrInvalid and
// name the task type and the property, e.g.
//
//	task: DUP: missing property "destStoreId"
//	task: AUDIT: property "content-size": not an integer: "abc"

// Property keys of the typed views (DuraCloud's names where DuraCloud has
// the property).
const (
	// DUP
	KeyDestStoreID = "destStoreId"

	// BIT and BIT_REPORT (Mill's additions)
	KeyRunID    = "runId"
	KeyExpected = "expected" // BIT_REPORT: items listed for the space in the run

	// BIT_ERROR
	KeyDescription          = "description"
	KeyCase                 = "case"                 // row of the bit-check decision table
	KeyInternallyResolvable = "internallyResolvable" // "true" or "false"
	KeyBitStoreType         = "storeType"
	KeyChecksumContent      = "contentChecksum"  // C: computed from the content
	KeyChecksumStore        = "storeChecksum"    // S: reported by the storage provider
	KeyChecksumManifest     = "manifestChecksum" // I: content index (DuraCloud's manifest)
	KeyChecksumAudit        = "auditChecksum"    // A: latest audit log entry

	// STORAGE_STATS (Mill's additions: a count part-way through a space)
	KeyStatsMarker  = "marker"    // the last content ID counted
	KeyStatsItems   = "itemCount" // items counted up to the marker
	KeyStatsBytes   = "byteCount" // their bytes
	KeyStatsStarted = "startedAt" // when the count began, epoch milliseconds

	// AUDIT
	KeyAction            = "action"
	KeyUserID            = "user-id"
	KeyDateTime          = "date-time" // epoch milliseconds
	KeyContentChecksum   = "content-checksum"
	KeyContentMimetype   = "content-mimetype"
	KeyContentSize       = "content-size"
	KeyContentProperties = "content-properties" // JSON object of strings
	KeySpaceACLs         = "space-acls"
	KeyStoreType         = "store-type"
	KeySourceSpaceID     = "source-space-id"
	KeySourceContentID   = "source-content-id"
)

// Action is the storage operation an AUDIT task records.
type Action string

// Audit actions (the write actions of DuraCloud's AuditTask.ActionType).
const (
	ActionCreateSpace          Action = "CREATE_SPACE"
	ActionDeleteSpace          Action = "DELETE_SPACE"
	ActionSetSpaceACLs         Action = "SET_SPACE_ACLS"
	ActionAddContent           Action = "ADD_CONTENT"
	ActionCopyContent          Action = "COPY_CONTENT"
	ActionDeleteContent        Action = "DELETE_CONTENT"
	ActionSetContentProperties Action = "SET_CONTENT_PROPERTIES"
)

// Actions lists every audit action.
var Actions = []Action{
	ActionCreateSpace, ActionDeleteSpace, ActionSetSpaceACLs, ActionAddContent,
	ActionCopyContent, ActionDeleteContent, ActionSetContentProperties,
}

// Known reports whether a is one of Actions.
func (a Action) Known() bool { return slices.Contains(Actions, a) }

// ContentAction reports whether a acts on a content item (and so needs a
// contentId) rather than on a space.
func (a Action) ContentAction() bool {
	switch a {
	case ActionAddContent, ActionCopyContent, ActionDeleteContent, ActionSetContentProperties:
		return true
	}
	return false
}

// ErrInvalid is wrapped by every error of the XFrom conversions.
var ErrInvalid = errors.New("task: invalid task")

// ValidationError says which property of a task is missing or malformed.
// It wraps ErrInvalid.
type ValidationError struct {
	Type Type
	Key  string // the property at fault; "" for the task type
	Msg  string // what is wrong with it
}

func (e *ValidationError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("task: %s: %s", e.Type, e.Msg)
	}
	if e.Msg == "" {
		return fmt.Sprintf("task: %s: missing property %q", e.Type, e.Key)
	}
	return fmt.Sprintf("task: %s: property %q: %s", e.Type, e.Key, e.Msg)
}

// Unwrap returns ErrInvalid.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// reader takes properties off a task one by one, collecting the first
// error; what it never took is the view's Extra.
type reader struct {
	typ   Type
	props map[string]string
	taken map[string]bool
	err   error
}

func newReader(t *Task, want Type) *reader {
	r := &reader{typ: want, taken: map[string]bool{}}
	switch {
	case t == nil:
		r.err = &ValidationError{Type: want, Msg: "nil task"}
	case t.Type != want:
		r.err = &ValidationError{Type: want, Msg: fmt.Sprintf("wrong task type %q", string(t.Type))}
	default:
		r.props = t.Props
	}
	return r
}

func (r *reader) fail(key, msg string) {
	if r.err == nil {
		r.err = &ValidationError{Type: r.typ, Key: key, Msg: msg}
	}
}

func (r *reader) opt(key string) string {
	r.taken[key] = true
	return r.props[key]
}

func (r *reader) req(key string) string {
	v := r.opt(key)
	if v == "" {
		r.fail(key, "")
	}
	return v
}

func (r *reader) optInt64(key string) *int64 {
	v := r.opt(key)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(key, fmt.Sprintf("not an integer: %q", v))
		return nil
	}
	if n < 0 {
		r.fail(key, fmt.Sprintf("negative: %q", v))
		return nil
	}
	return &n
}

func (r *reader) reqInt(key string) int {
	v := r.req(key)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(key, fmt.Sprintf("not an integer: %q", v))
	}
	return n
}

func (r *reader) optBool(key string) bool {
	v := r.opt(key)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(key, fmt.Sprintf("not a boolean: %q", v))
	}
	return b
}

// extra returns the properties never taken, or nil when there are none.
func (r *reader) extra() map[string]string {
	var out map[string]string
	for k, v := range r.props {
		if !r.taken[k] {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// writer builds a task: Extra first, then the view's fields over it.
type writer struct{ t *Task }

func newWriter(typ Type, attempts int, extra map[string]string) writer {
	t := New(typ, extra)
	t.Attempts = attempts
	delete(t.Props, KeyType)
	delete(t.Props, KeyAttempts)
	return writer{t}
}

// set writes v under key, or removes key when v is empty.
func (w writer) set(key, v string) {
	if v == "" {
		delete(w.t.Props, key)
		return
	}
	w.t.Props[key] = v
}

func (w writer) setInt64(key string, n *int64) {
	if n == nil {
		delete(w.t.Props, key)
		return
	}
	w.t.Props[key] = strconv.FormatInt(*n, 10)
}

// Dup is a DUP task: make the copy of an item (or of a space, when ContentID
// is empty) on the destination store match the source store.
type Dup struct {
	Account     string // required
	StoreID     string // source store; required
	DestStoreID string // required
	SpaceID     string // required
	ContentID   string // empty for a space-level task
	Attempts    int
	Extra       map[string]string
}

// DupFrom reads a DUP task.
func DupFrom(t *Task) (Dup, error) {
	r := newReader(t, TypeDup)
	d := Dup{
		Account:     r.req(KeyAccount),
		StoreID:     r.req(KeyStoreID),
		DestStoreID: r.req(KeyDestStoreID),
		SpaceID:     r.req(KeySpaceID),
		ContentID:   r.opt(KeyContentID),
		Extra:       r.extra(),
	}
	if r.err != nil {
		return Dup{}, r.err
	}
	d.Attempts = t.Attempts
	return d, nil
}

// Task returns d as a task.
func (d Dup) Task() *Task {
	w := newWriter(TypeDup, d.Attempts, d.Extra)
	w.set(KeyAccount, d.Account)
	w.set(KeyStoreID, d.StoreID)
	w.set(KeyDestStoreID, d.DestStoreID)
	w.set(KeySpaceID, d.SpaceID)
	w.set(KeyContentID, d.ContentID)
	return w.t
}

// Bit is a BIT task: check the integrity of one item.
type Bit struct {
	Account   string // required
	StoreID   string // required
	SpaceID   string // required
	ContentID string // required
	RunID     string // the bitproducer run; optional
	Attempts  int
	Extra     map[string]string
}

// BitFrom reads a BIT task.
func BitFrom(t *Task) (Bit, error) {
	r := newReader(t, TypeBit)
	b := Bit{
		Account:   r.req(KeyAccount),
		StoreID:   r.req(KeyStoreID),
		SpaceID:   r.req(KeySpaceID),
		ContentID: r.req(KeyContentID),
		RunID:     r.opt(KeyRunID),
		Extra:     r.extra(),
	}
	if r.err != nil {
		return Bit{}, r.err
	}
	b.Attempts = t.Attempts
	return b, nil
}

// Task returns b as a task.
func (b Bit) Task() *Task {
	w := newWriter(TypeBit, b.Attempts, b.Extra)
	w.set(KeyAccount, b.Account)
	w.set(KeyStoreID, b.StoreID)
	w.set(KeySpaceID, b.SpaceID)
	w.set(KeyContentID, b.ContentID)
	w.set(KeyRunID, b.RunID)
	return w.t
}

// BitReport is a BIT_REPORT task: report on the bit checks of one space.
type BitReport struct {
	Account string // required
	StoreID string // required
	SpaceID string // required
	RunID   string // optional
	// Expected is how many items the run listed in the space; nil when not
	// given. Never negative.
	Expected *int64
	Attempts int
	Extra    map[string]string
}

// BitReportFrom reads a BIT_REPORT task.
func BitReportFrom(t *Task) (BitReport, error) {
	r := newReader(t, TypeBitReport)
	b := BitReport{
		Account:  r.req(KeyAccount),
		StoreID:  r.req(KeyStoreID),
		SpaceID:  r.req(KeySpaceID),
		RunID:    r.opt(KeyRunID),
		Expected: r.optInt64(KeyExpected),
		Extra:    r.extra(),
	}
	if r.err != nil {
		return BitReport{}, r.err
	}
	b.Attempts = t.Attempts
	return b, nil
}

// Task returns b as a task.
func (b BitReport) Task() *Task {
	w := newWriter(TypeBitReport, b.Attempts, b.Extra)
	w.set(KeyAccount, b.Account)
	w.set(KeyStoreID, b.StoreID)
	w.set(KeySpaceID, b.SpaceID)
	w.set(KeyRunID, b.RunID)
	w.setInt64(KeyExpected, b.Expected)
	return w.t
}

// BitError is a BIT_ERROR task: a bit check found a problem that needs
// repair or attention. The checksums are those the check saw; an empty one
// was not available.
type BitError struct {
	Account     string // required
	StoreID     string // required
	SpaceID     string // required
	ContentID   string // required
	RunID       string // optional
	Description string // optional
	StoreType   string // kind of the store; optional
	// Case is the row of the bit-check decision table; required.
	Case int
	// InternallyResolvable reports whether a healthy copy exists on another
	// store, so the mill can repair the item itself.
	InternallyResolvable bool
	ContentChecksum      string // C: computed from the content
	StorageChecksum      string // S: reported by the storage provider
	IndexChecksum        string // I: content index ("manifestChecksum")
	AuditChecksum        string // A: latest audit log entry
	Attempts             int
	Extra                map[string]string
}

// BitErrorFrom reads a BIT_ERROR task.
func BitErrorFrom(t *Task) (BitError, error) {
	r := newReader(t, TypeBitError)
	b := BitError{
		Account:              r.req(KeyAccount),
		StoreID:              r.req(KeyStoreID),
		SpaceID:              r.req(KeySpaceID),
		ContentID:            r.req(KeyContentID),
		RunID:                r.opt(KeyRunID),
		Description:          r.opt(KeyDescription),
		StoreType:            r.opt(KeyBitStoreType),
		Case:                 r.reqInt(KeyCase),
		InternallyResolvable: r.optBool(KeyInternallyResolvable),
		ContentChecksum:      r.opt(KeyChecksumContent),
		StorageChecksum:      r.opt(KeyChecksumStore),
		IndexChecksum:        r.opt(KeyChecksumManifest),
		AuditChecksum:        r.opt(KeyChecksumAudit),
		Extra:                r.extra(),
	}
	if r.err != nil {
		return BitError{}, r.err
	}
	b.Attempts = t.Attempts
	return b, nil
}

// Task returns b as a task.
func (b BitError) Task() *Task {
	w := newWriter(TypeBitError, b.Attempts, b.Extra)
	w.set(KeyAccount, b.Account)
	w.set(KeyStoreID, b.StoreID)
	w.set(KeySpaceID, b.SpaceID)
	w.set(KeyContentID, b.ContentID)
	w.set(KeyRunID, b.RunID)
	w.set(KeyDescription, b.Description)
	w.set(KeyBitStoreType, b.StoreType)
	w.set(KeyCase, strconv.Itoa(b.Case))
	w.set(KeyInternallyResolvable, strconv.FormatBool(b.InternallyResolvable))
	w.set(KeyChecksumContent, b.ContentChecksum)
	w.set(KeyChecksumStore, b.StorageChecksum)
	w.set(KeyChecksumManifest, b.IndexChecksum)
	w.set(KeyChecksumAudit, b.AuditChecksum)
	return w.t
}

// Audit is an AUDIT task: a write to a store, to be recorded in the audit
// log and the content index and duplicated.
type Audit struct {
	Account string // required
	StoreID string // required
	SpaceID string // required
	// ContentID is required for content actions (Action.ContentAction) and
	// optional otherwise.
	ContentID string
	Action    Action // required; one of Actions
	UserID    string
	// DateTime is when the write happened; required. On the wire it is
	// epoch milliseconds, so it has millisecond precision.
	DateTime        time.Time
	ContentChecksum string
	ContentMimetype string
	ContentSize     *int64 // nil when not given; never negative
	// ContentProperties is the item's properties; nil when not given. On the
	// wire it is a JSON object of strings (DuraCloud writes it pretty-printed,
	// Mill compactly).
	ContentProperties map[string]string
	// SpaceACLs maps an ACL name to its right (READ, WRITE); nil when not
	// given. Mill writes a JSON object; it also reads the Java Map.toString
	// form DuraCloud writes ("{acl-user=READ, acl-group-x=WRITE}").
	SpaceACLs       map[string]string
	StoreType       string
	SourceSpaceID   string // COPY_CONTENT: where the content was copied from
	SourceContentID string
	Attempts        int
	Extra           map[string]string
}

// AuditFrom reads an AUDIT task.
func AuditFrom(t *Task) (Audit, error) {
	r := newReader(t, TypeAudit)
	a := Audit{
		Account:         r.req(KeyAccount),
		StoreID:         r.req(KeyStoreID),
		SpaceID:         r.req(KeySpaceID),
		ContentID:       r.opt(KeyContentID),
		Action:          Action(r.req(KeyAction)),
		UserID:          r.opt(KeyUserID),
		ContentChecksum: r.opt(KeyContentChecksum),
		ContentMimetype: r.opt(KeyContentMimetype),
		ContentSize:     r.optInt64(KeyContentSize),
		StoreType:       r.opt(KeyStoreType),
		SourceSpaceID:   r.opt(KeySourceSpaceID),
		SourceContentID: r.opt(KeySourceContentID),
	}
	if a.Action != "" && !a.Action.Known() {
		r.fail(KeyAction, fmt.Sprintf("unknown action %q", string(a.Action)))
	}
	if a.Action.ContentAction() && a.ContentID == "" {
		r.fail(KeyContentID, "")
	}
	if v := r.req(KeyDateTime); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			r.fail(KeyDateTime, fmt.Sprintf("not an integer (epoch milliseconds): %q", v))
		}
		a.DateTime = time.UnixMilli(ms).UTC()
	}
	if v := r.opt(KeyContentProperties); v != "" {
		if err := json.Unmarshal([]byte(v), &a.ContentProperties); err != nil || a.ContentProperties == nil {
			r.fail(KeyContentProperties, fmt.Sprintf("not a JSON object of strings: %q", v))
		}
	}
	if v := r.opt(KeySpaceACLs); v != "" {
		acls, err := parseACLs(v)
		if err != nil {
			r.fail(KeySpaceACLs, err.Error())
		}
		a.SpaceACLs = acls
	}
	a.Extra = r.extra()
	if r.err != nil {
		return Audit{}, r.err
	}
	a.Attempts = t.Attempts
	return a, nil
}

// Task returns a as a task.
func (a Audit) Task() *Task {
	w := newWriter(TypeAudit, a.Attempts, a.Extra)
	w.set(KeyAccount, a.Account)
	w.set(KeyStoreID, a.StoreID)
	w.set(KeySpaceID, a.SpaceID)
	w.set(KeyContentID, a.ContentID)
	w.set(KeyAction, string(a.Action))
	w.set(KeyUserID, a.UserID)
	if a.DateTime.IsZero() {
		w.set(KeyDateTime, "")
	} else {
		w.set(KeyDateTime, strconv.FormatInt(a.DateTime.UnixMilli(), 10))
	}
	w.set(KeyContentChecksum, a.ContentChecksum)
	w.set(KeyContentMimetype, a.ContentMimetype)
	w.setInt64(KeyContentSize, a.ContentSize)
	w.set(KeyContentProperties, jsonObject(a.ContentProperties))
	w.set(KeySpaceACLs, jsonObject(a.SpaceACLs))
	w.set(KeyStoreType, a.StoreType)
	w.set(KeySourceSpaceID, a.SourceSpaceID)
	w.set(KeySourceContentID, a.SourceContentID)
	return w.t
}

// jsonObject returns m as compact JSON with sorted keys, or "" for nil.
func jsonObject(m map[string]string) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	// Encoding a map of strings cannot fail.
	_ = enc.Encode(m)
	return strings.TrimSuffix(b.String(), "\n")
}

// parseACLs reads space ACLs as a JSON object of strings or as the
// Java Map.toString form "{name=RIGHT, name2=RIGHT}".
func parseACLs(v string) (map[string]string, error) {
	var m map[string]string
	if json.Unmarshal([]byte(v), &m) == nil && m != nil {
		return m, nil
	}
	s := strings.TrimSpace(v)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return nil, fmt.Errorf("neither a JSON object of strings nor {name=RIGHT, …}: %q", v)
	}
	m = map[string]string{}
	inner := strings.TrimSpace(s[1 : len(s)-1])
	if inner == "" {
		return m, nil
	}
	for _, entry := range strings.Split(inner, ", ") {
		name, right, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("entry %q has no '=': %q", entry, v)
		}
		m[strings.TrimSpace(name)] = strings.TrimSpace(right)
	}
	return m, nil
}

// StorageStats is a STORAGE_STATS task: count the items and bytes of one
// space. A count of a large space goes on in a continuation task that
// carries where it stopped (Marker) and what it counted so far.
type StorageStats struct {
	Account string // required
	StoreID string // required
	SpaceID string // required
	// RunID is the producer run the count belongs to; optional (the
	// processor names a count outside any run itself).
	RunID string
	// Marker is the last content ID counted by the earlier tasks of a
	// continued count; "" for a count that starts at the beginning.
	Marker string
	// Items and Bytes are what the earlier tasks counted (0 at the start).
	Items, Bytes int64
	// Started is when the count began (zero at the start); on the wire
	// epoch milliseconds.
	Started  time.Time
	Attempts int
	Extra    map[string]string
}

// StorageStatsFrom reads a STORAGE_STATS task.
func StorageStatsFrom(t *Task) (StorageStats, error) {
	r := newReader(t, TypeStorageStats)
	s := StorageStats{
		Account: r.req(KeyAccount),
		StoreID: r.req(KeyStoreID),
		SpaceID: r.req(KeySpaceID),
		RunID:   r.opt(KeyRunID),
		Marker:  r.opt(KeyStatsMarker),
	}
	if n := r.optInt64(KeyStatsItems); n != nil {
		s.Items = *n
	}
	if n := r.optInt64(KeyStatsBytes); n != nil {
		s.Bytes = *n
	}
	if ms := r.optInt64(KeyStatsStarted); ms != nil {
		s.Started = time.UnixMilli(*ms).UTC()
	}
	s.Extra = r.extra()
	if r.err != nil {
		return StorageStats{}, r.err
	}
	s.Attempts = t.Attempts
	return s, nil
}

// Task returns s as a task.
func (s StorageStats) Task() *Task {
	w := newWriter(TypeStorageStats, s.Attempts, s.Extra)
	w.set(KeyAccount, s.Account)
	w.set(KeyStoreID, s.StoreID)
	w.set(KeySpaceID, s.SpaceID)
	w.set(KeyRunID, s.RunID)
	w.set(KeyStatsMarker, s.Marker)
	for _, kv := range []struct {
		key string
		n   int64
	}{{KeyStatsItems, s.Items}, {KeyStatsBytes, s.Bytes}} {
		if kv.n != 0 {
			w.setInt64(kv.key, &kv.n)
		} else {
			w.set(kv.key, "")
		}
	}
	if s.Started.IsZero() {
		w.set(KeyStatsStarted, "")
	} else {
		ms := s.Started.UnixMilli()
		w.setInt64(KeyStatsStarted, &ms)
	}
	return w.t
}

// Noop is a NOOP task, used by tests and benchmarks. It accepts any
// properties; all of them are in Extra.
type Noop struct {
	Attempts int
	Extra    map[string]string
}

// NoopFrom reads a NOOP task.
func NoopFrom(t *Task) (Noop, error) {
	r := newReader(t, TypeNoop)
	if r.err != nil {
		return Noop{}, r.err
	}
	return Noop{Attempts: t.Attempts, Extra: maps.Clone(t.Props)}, nil
}

// Task returns n as a task.
func (n Noop) Task() *Task { return newWriter(TypeNoop, n.Attempts, n.Extra).t }
