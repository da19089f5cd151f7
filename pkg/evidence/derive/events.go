package derive

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/task"
)

// Users names the audit log's user IDs of Mill's own writers, which say
// what a write was. The app layer fills it from the processors' constants
// (DefaultUsers has their values).
type Users struct {
	// Duplication is the user of the duplication processor's writes: an
	// ADD_CONTENT or COPY_CONTENT is a replication, a DELETE_CONTENT a
	// deletion by the space's store policy.
	Duplication string
	// Repair is the user of the bit error processor's writes: an
	// ADD_CONTENT is a repair from the good copy.
	Repair string
	// Migration is the user of millctl migrate duracloud's writes: an
	// ADD_CONTENT or COPY_CONTENT is a replication (eventDetail
	// "migration") from the DuraCloud store the entry names.
	Migration string
	// Mill lists the other user IDs of Mill's software (their writes are
	// not preservation actions: an audit entry re-synced from storage, an
	// admin report); a deletion by one of them is still an event.
	Mill []string
	// BitAgent is the agent name of the fixity checks whose bit-log rows
	// name no agent (rows written before agents were recorded, or by a
	// writer that names none).
	BitAgent string
}

// DefaultUsers are the user IDs of Mill's processors.
var DefaultUsers = Users{
	Duplication: "mill-duplication",
	Repair:      "mill-biterror",
	Migration:   "mill-migrate",
	Mill:        []string{"mill-bit", "mill-bitreport"},
	BitAgent:    "mill-bit",
}

// WorkmanAgent is the agent name of a fixity check whose bit-log row
// names the Workman that made it (bitlog.Row.Agent): the event's agent is
// "mill workman" with the row's instance and Mill version.
const WorkmanAgent = "mill workman"

// Unrecorded stands for what a record does not hold: the source store of
// a replication or repair whose audit entry names none (written before
// entries recorded it, or whose claim the audit processor dropped) and an
// agent the record does not name.
const Unrecorded = "unrecorded"

// Event ID namespaces: an event's ID is derived from the identity of the
// record it comes from, so the same record always gives the same ID.
const (
	bitlogNS   = "bitlog/v1"
	auditlogNS = "auditlog/v1"
)

// RowID is the ID of the event of a bit-log row: its key and the time of
// its check (a redelivered check that replaced the row at another time is
// another event).
func RowID(r bitlog.Row) string {
	return evidence.EventID(bitlogNS, r.RunID, r.Account, r.StoreID, r.SpaceID, r.ContentID, evidence.FormatTime(bitlog.Truncate(r.CheckedAt)))
}

// EntryID is the ID of the event of an audit-log entry: its table key.
func EntryID(e auditlog.Entry) (string, error) {
	k := e.Key()
	sk, err := k.SK()
	if err != nil {
		return "", err
	}
	return evidence.EventID(auditlogNS, k.PK(), sk), nil
}

// RowDetail is the eventDetail of a fixity check: its run (which
// RunOfDetail reads back) and the decision table's case.
func RowDetail(r bitlog.Row) string {
	run := r.RunID
	if run == "" {
		run = "-"
	}
	return fmt.Sprintf("bit check; run %s; case %d", clean(run, 200), r.Case)
}

// RunOfDetail returns the run a fixity check's detail names ("" for a
// check outside any run) and whether it is such a detail.
func RunOfDetail(d string) (string, bool) {
	rest, ok := strings.CutPrefix(d, "bit check; run ")
	if !ok {
		return "", false
	}
	run, _, ok := strings.Cut(rest, "; case ")
	if run == "-" {
		run = ""
	}
	return run, ok
}

// FromRow returns the fixity check event of a bit-log row, or nil when the
// row is no fixity check: only a row whose content checksum was made from
// the copy (Method read or at-rest) is one. SUCCESS and FAILURE are its
// outcome; an ERROR (the check reached no verdict) is a warning. An error
// names a row that cannot be an event (a field out of bounds).
func FromRow(r bitlog.Row, u Users) (*evidence.Event, error) {
	if !r.Method.Fresh() {
		return nil, nil
	}
	out := evidence.Warning
	switch r.Result {
	case bitlog.ResultSuccess:
		out = evidence.Success
	case bitlog.ResultFailure:
		out = evidence.Failure
	}
	method := evidence.MethodRead
	if r.Method == bitlog.MethodAtRest {
		method = evidence.MethodAtRest
	}
	alg, digest := parseDigest(r.ContentChecksum)
	f := &evidence.Fixity{Algorithm: alg, Digest: digest, Method: method}
	for _, x := range []string{r.IndexChecksum, r.AuditChecksum, r.StorageChecksum} {
		if a, d := parseDigest(x); d != "" && a == alg {
			f.Expected = d
			break
		}
	}
	e := &evidence.Event{
		V: evidence.FormatVersion, ID: RowID(r), Type: evidence.FixityCheck,
		Time:   evidence.FormatTime(bitlog.Truncate(r.CheckedAt)),
		Object: evidence.Copy{Account: r.Account, Store: r.StoreID, Space: r.SpaceID, ContentID: r.ContentID},
		Fixity: f, Outcome: out, Detail: RowDetail(r),
		Agent: rowAgent(r.Agent, u),
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("bit-log row %s: %w", r.Key(), err)
	}
	return e, nil
}

// rowAgent is the agent of a fixity check: the Workman instance and Mill
// version its row names, or u.BitAgent for a row naming none.
func rowAgent(a bitlog.Agent, u Users) evidence.Agent {
	if a == (bitlog.Agent{}) {
		return evidence.Agent{Kind: evidence.Software, Name: u.BitAgent}
	}
	return evidence.Agent{Kind: evidence.Software, Name: WorkmanAgent,
		Instance: clean(orUnrecorded(a.Instance), bitlog.MaxAgentField), Version: clean(orUnrecorded(a.Version), bitlog.MaxAgentField)}
}

// parseDigest reads a checksum as Mill records it: lowercase or uppercase
// hex (an MD5, or a SHA-256), "md5:HEX", or "crc64nvme:BASE64". It returns
// MD5 and "" for anything else (no digest).
func parseDigest(s string) (evidence.Algorithm, string) {
	if b64, ok := strings.CutPrefix(s, "crc64nvme:"); ok {
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(b) != 8 {
			return evidence.CRC64NVME, ""
		}
		return evidence.CRC64NVME, hex.EncodeToString(b)
	}
	s = strings.ToLower(strings.TrimPrefix(s, "md5:"))
	b, err := hex.DecodeString(s)
	switch {
	case err == nil && len(b) == 16:
		return evidence.MD5, s
	case err == nil && len(b) == 32:
		return evidence.SHA256, s
	}
	return evidence.MD5, ""
}

// FromEntry returns the event of an audit-log entry, or nil when the entry
// is no preservation action: a replication (an ADD_CONTENT or
// COPY_CONTENT of the duplication processor), a repair (an ADD_CONTENT of
// the bit error processor) or a deletion (a DELETE_CONTENT by anyone, with
// the rule that authorised it: the space's store policy for duplication,
// otherwise the request of the user the entry names). Space-level entries,
// property changes and the writes of users are not events.
func FromEntry(en auditlog.Entry, u Users) (*evidence.Event, error) {
	if en.ContentID == "" {
		return nil, nil
	}
	id, err := EntryID(en)
	if err != nil {
		return nil, fmt.Errorf("audit-log entry %s: %w", auditlog.ItemKey(en.Account, en.StoreID, en.SpaceID, en.ContentID), err)
	}
	obj := evidence.Copy{Account: en.Account, Store: en.StoreID, Space: en.SpaceID, ContentID: en.ContentID}
	e := &evidence.Event{V: evidence.FormatVersion, ID: id, Time: evidence.FormatTime(en.Time), Object: obj,
		Outcome: evidence.Success, Agent: agentOf(en.UserID, u)}
	switch {
	case en.Action == task.ActionDeleteContent && en.UserID == u.Duplication:
		e.Type, e.Rule = evidence.Deletion, "duplication: the item is gone from the source store of the space's store policy"
	case en.Action == task.ActionDeleteContent:
		e.Type, e.Rule = evidence.Deletion, "request of user "+clean(orUnrecorded(en.UserID), 200)
	case en.UserID == u.Duplication && (en.Action == task.ActionAddContent || en.Action == task.ActionCopyContent):
		e.Type = evidence.Replication
	case en.UserID == u.Repair && en.Action == task.ActionAddContent:
		e.Type = evidence.Repair
	case u.Migration != "" && en.UserID == u.Migration && (en.Action == task.ActionAddContent || en.Action == task.ActionCopyContent):
		e.Type = evidence.Replication
	default:
		return nil, nil
	}
	if e.Type != evidence.Deletion {
		src := obj
		src.Store = Unrecorded
		if en.SourceSpaceID != "" && en.SourceContentID != "" {
			src.Space, src.ContentID = en.SourceSpaceID, en.SourceContentID
		}
		if en.SourceStoreID != "" {
			src.Store = clean(en.SourceStoreID, 200)
		}
		if src == obj { // an entry changed since the audit processor checked it
			src.Store = Unrecorded
		}
		e.Source = &src
		e.Detail = "audit " + string(en.Action)
		if _, d := parseDigest(en.Checksum); d != "" {
			e.Detail += "; checksum " + d
		}
		switch {
		case e.Type == evidence.Repair:
			e.Detail = "repair; " + e.Detail
		case en.UserID == u.Migration:
			e.Detail = "migration; " + e.Detail
		}
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("audit-log entry %s %s: %w", auditlog.ItemKey(en.Account, en.StoreID, en.SpaceID, en.ContentID), en.Time.Format("2006-01-02T15:04:05.000Z07:00"), err)
	}
	return e, nil
}

// agentOf is the agent of a write by user: Mill's software for its own
// users, otherwise the person (or the S3 event's claimed principal).
func agentOf(user string, u Users) evidence.Agent {
	if user == u.Duplication || user == u.Repair || (u.Migration != "" && user == u.Migration) {
		return evidence.Agent{Kind: evidence.Software, Name: user}
	}
	for _, m := range u.Mill {
		if user == m {
			return evidence.Agent{Kind: evidence.Software, Name: user}
		}
	}
	return evidence.Agent{Kind: evidence.Person, Name: clean(orUnrecorded(user), 1000)}
}

func orUnrecorded(s string) string {
	if s == "" {
		return Unrecorded
	}
	return s
}

// clean makes s fit an event's free text: control characters and invalid
// UTF-8 become U+FFFD, and it is cut to at most n bytes.
func clean(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '\uFFFD'
		}
		return r
	}, s)
	for len(s) > n {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}
