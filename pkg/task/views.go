package task

import (
	"encoding/json"
	"errors"
	"fmt"
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

	// Every task a producer queues (Mill's addition): the producer run
	// (pkg/runs). Task.RunID reads it.
	KeyRunID    = "runId"
	KeyExpected = "expected" // BIT_REPORT: items listed for the space in the run
	// KeyAtRestJob (BIT): the at-rest checksum job whose computed checksum
	// is the item's C (the bit producer's record of the job in the bit
	// log is what the processor trusts, never this name alone).
	KeyAtRestJob = "atRestJob"

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
	// KeySourceStoreID (Mill's addition): the store a replication or
	// repair read the content from. A claim of the message: the audit
	// processor records it only when it names another registered store
	// of the account.
	KeySourceStoreID = "source-store-id"
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

// Dup is a DUP task: make the copy of an item (or of a space, when ContentID
// is empty) on the destination store match the source store.
type Dup struct {
	Account     string // required
	StoreID     string // source store; required
	DestStoreID string // required
	SpaceID     string // required
	ContentID   string // empty for a space-level task
	// RunID is the producer run that queued the task (pkg/runs); optional
	// (DuraCloud's messages have none).
	RunID    string
	Attempts int
	Extra    map[string]string
}

var dupFields = []field[Dup]{
	str(KeyAccount, true, func(x *Dup) *string { return &x.Account }),
	str(KeyStoreID, true, func(x *Dup) *string { return &x.StoreID }),
	str(KeyDestStoreID, true, func(x *Dup) *string { return &x.DestStoreID }),
	str(KeySpaceID, true, func(x *Dup) *string { return &x.SpaceID }),
	str(KeyContentID, false, func(x *Dup) *string { return &x.ContentID }),
	str(KeyRunID, false, func(x *Dup) *string { return &x.RunID }),
}

func (x *Dup) common() common { return common{&x.Attempts, &x.Extra} }

// DupFrom reads a DUP task.
func DupFrom(t *Task) (Dup, error) {
	return readView(t, TypeDup, dupFields, (*Dup).common)
}

// Task returns the view as a task.
func (x Dup) Task() *Task { return writeView(x, TypeDup, dupFields, (*Dup).common) }

// Bit is a BIT task: check the integrity of one item.
type Bit struct {
	Account   string // required
	StoreID   string // required
	SpaceID   string // required
	ContentID string // required
	RunID     string // the bitproducer run; optional
	// AtRestJob names the at-rest checksum job of the run whose result is
	// the item's C (no byte is read); optional, only with RunID.
	AtRestJob string
	Attempts  int
	Extra     map[string]string
}

var bitFields = []field[Bit]{
	str(KeyAccount, true, func(x *Bit) *string { return &x.Account }),
	str(KeyStoreID, true, func(x *Bit) *string { return &x.StoreID }),
	str(KeySpaceID, true, func(x *Bit) *string { return &x.SpaceID }),
	str(KeyContentID, true, func(x *Bit) *string { return &x.ContentID }),
	str(KeyRunID, false, func(x *Bit) *string { return &x.RunID }),
	str(KeyAtRestJob, false, func(x *Bit) *string { return &x.AtRestJob }),
}

func (x *Bit) common() common { return common{&x.Attempts, &x.Extra} }

// BitFrom reads a BIT task.
func BitFrom(t *Task) (Bit, error) {
	return readView(t, TypeBit, bitFields, (*Bit).common)
}

// Task returns the view as a task.
func (x Bit) Task() *Task { return writeView(x, TypeBit, bitFields, (*Bit).common) }

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

var bitReportFields = []field[BitReport]{
	str(KeyAccount, true, func(x *BitReport) *string { return &x.Account }),
	str(KeyStoreID, true, func(x *BitReport) *string { return &x.StoreID }),
	str(KeySpaceID, true, func(x *BitReport) *string { return &x.SpaceID }),
	str(KeyRunID, false, func(x *BitReport) *string { return &x.RunID }),
	optInt64(KeyExpected, func(x *BitReport) **int64 { return &x.Expected }),
}

func (x *BitReport) common() common { return common{&x.Attempts, &x.Extra} }

// BitReportFrom reads a BIT_REPORT task.
func BitReportFrom(t *Task) (BitReport, error) {
	return readView(t, TypeBitReport, bitReportFields, (*BitReport).common)
}

// Task returns the view as a task.
func (x BitReport) Task() *Task {
	return writeView(x, TypeBitReport, bitReportFields, (*BitReport).common)
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
	// Case is the row of the bit-check decision table (1 or more). 0
	// when absent: the Java Mill's BIT_ERROR (BitIntegrityErrorTask), which
	// names no case and no run; a task with a RunID must have one.
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

var bitErrorFields = []field[BitError]{
	str(KeyAccount, true, func(x *BitError) *string { return &x.Account }),
	str(KeyStoreID, true, func(x *BitError) *string { return &x.StoreID }),
	str(KeySpaceID, true, func(x *BitError) *string { return &x.SpaceID }),
	str(KeyContentID, true, func(x *BitError) *string { return &x.ContentID }),
	str(KeyRunID, false, func(x *BitError) *string { return &x.RunID }),
	str(KeyDescription, false, func(x *BitError) *string { return &x.Description }),
	str(KeyBitStoreType, false, func(x *BitError) *string { return &x.StoreType }),
	{
		read: func(r *reader, x *BitError) {
			if r.opt(KeyCase) == "" && x.RunID == "" {
				return // the Java Mill's shape
			}
			if x.Case = r.reqInt(KeyCase); x.Case < 0 || (x.Case == 0 && r.props[KeyCase] != "") {
				r.fail(KeyCase, fmt.Sprintf("not a case of the decision table: %q", r.props[KeyCase]))
			}
		},
		write: func(w writer, x *BitError) {
			if x.Case != 0 || x.RunID != "" {
				w.set(KeyCase, strconv.Itoa(x.Case))
			}
		},
	},
	optBool(KeyInternallyResolvable, func(x *BitError) *bool { return &x.InternallyResolvable }),
	str(KeyChecksumContent, false, func(x *BitError) *string { return &x.ContentChecksum }),
	str(KeyChecksumStore, false, func(x *BitError) *string { return &x.StorageChecksum }),
	str(KeyChecksumManifest, false, func(x *BitError) *string { return &x.IndexChecksum }),
	str(KeyChecksumAudit, false, func(x *BitError) *string { return &x.AuditChecksum }),
}

func (x *BitError) common() common { return common{&x.Attempts, &x.Extra} }

// BitErrorFrom reads a BIT_ERROR task.
func BitErrorFrom(t *Task) (BitError, error) {
	return readView(t, TypeBitError, bitErrorFields, (*BitError).common)
}

// Task returns the view as a task.
func (x BitError) Task() *Task { return writeView(x, TypeBitError, bitErrorFields, (*BitError).common) }

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
	// SourceStoreID: the store Mill's duplication or repair read the
	// content from (ADD_CONTENT, COPY_CONTENT); "" when not given.
	SourceStoreID string
	Attempts      int
	Extra         map[string]string
}

var auditFields = []field[Audit]{
	str(KeyAccount, true, func(x *Audit) *string { return &x.Account }),
	str(KeyStoreID, true, func(x *Audit) *string { return &x.StoreID }),
	str(KeySpaceID, true, func(x *Audit) *string { return &x.SpaceID }),
	str(KeyContentID, false, func(x *Audit) *string { return &x.ContentID }),
	{
		read:  func(r *reader, a *Audit) { a.Action = Action(r.req(KeyAction)) },
		write: func(w writer, a *Audit) { w.set(KeyAction, string(a.Action)) },
	},
	str(KeyUserID, false, func(x *Audit) *string { return &x.UserID }),
	str(KeyContentChecksum, false, func(x *Audit) *string { return &x.ContentChecksum }),
	str(KeyContentMimetype, false, func(x *Audit) *string { return &x.ContentMimetype }),
	optInt64(KeyContentSize, func(x *Audit) **int64 { return &x.ContentSize }),
	str(KeyStoreType, false, func(x *Audit) *string { return &x.StoreType }),
	str(KeySourceSpaceID, false, func(x *Audit) *string { return &x.SourceSpaceID }),
	str(KeySourceContentID, false, func(x *Audit) *string { return &x.SourceContentID }),
	str(KeySourceStoreID, false, func(x *Audit) *string { return &x.SourceStoreID }),
	check(func(r *reader, a *Audit) {
		if a.Action != "" && !a.Action.Known() {
			r.fail(KeyAction, fmt.Sprintf("unknown action %q", string(a.Action)))
		}
		if a.Action.ContentAction() && a.ContentID == "" {
			r.fail(KeyContentID, "")
		}
	}),
	{
		read: func(r *reader, a *Audit) {
			if v := r.req(KeyDateTime); v != "" {
				ms, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					r.fail(KeyDateTime, fmt.Sprintf("not an integer (epoch milliseconds): %q", v))
				}
				a.DateTime = time.UnixMilli(ms).UTC()
			}
		},
		write: func(w writer, a *Audit) {
			if !a.DateTime.IsZero() {
				w.set(KeyDateTime, strconv.FormatInt(a.DateTime.UnixMilli(), 10))
			} else {
				w.set(KeyDateTime, "")
			}
		},
	},
	{
		read: func(r *reader, a *Audit) {
			if v := r.opt(KeyContentProperties); v != "" {
				if err := json.Unmarshal([]byte(v), &a.ContentProperties); err != nil || a.ContentProperties == nil {
					r.fail(KeyContentProperties, fmt.Sprintf("not a JSON object of strings: %q", v))
				}
			}
		},
		write: func(w writer, a *Audit) { w.set(KeyContentProperties, jsonObject(a.ContentProperties)) },
	},
	{
		read: func(r *reader, a *Audit) {
			if v := r.opt(KeySpaceACLs); v != "" {
				acls, err := parseACLs(v)
				if err != nil {
					r.fail(KeySpaceACLs, err.Error())
				}
				a.SpaceACLs = acls
			}
		},
		write: func(w writer, a *Audit) { w.set(KeySpaceACLs, jsonObject(a.SpaceACLs)) },
	},
}

func (x *Audit) common() common { return common{&x.Attempts, &x.Extra} }

// AuditFrom reads a AUDIT task.
func AuditFrom(t *Task) (Audit, error) {
	return readView(t, TypeAudit, auditFields, (*Audit).common)
}

// Task returns the view as a task.
func (x Audit) Task() *Task { return writeView(x, TypeAudit, auditFields, (*Audit).common) }

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
