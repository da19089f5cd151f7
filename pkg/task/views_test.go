package task

import (
	"errors"
	"maps"
	"reflect"
	"testing"
	"time"
)

// viewRoundTrip converts t to its view and back.
func viewRoundTrip(t *Task) (*Task, error) {
	switch t.Type {
	case TypeDup:
		v, err := DupFrom(t)
		return v.Task(), err
	case TypeBit:
		v, err := BitFrom(t)
		return v.Task(), err
	case TypeBitReport:
		v, err := BitReportFrom(t)
		return v.Task(), err
	case TypeBitError:
		v, err := BitErrorFrom(t)
		return v.Task(), err
	case TypeAudit:
		v, err := AuditFrom(t)
		return v.Task(), err
	case TypeNoop:
		v, err := NoopFrom(t)
		return v.Task(), err
	case TypeStorageStats:
		v, err := StorageStatsFrom(t)
		return v.Task(), err
	}
	return nil, errors.New("no view")
}

func TestViewsRoundTripKeepUnknownProperties(t *testing.T) {
	base := map[string]string{KeyAccount: "acme", KeyStoreID: "1", KeySpaceID: "photos", KeyContentID: "a/b.jpg", "x-unknown": "kept"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tasks := []*Task{
		{Type: TypeDup, Attempts: 2, Props: with(KeyDestStoreID, "2")},
		{Type: TypeBit, Props: with(KeyRunID, "run-1")},
		{Type: TypeBit, Props: with(KeyRunID, "run-1", KeyAtRestJob, "job-1")},
		{Type: TypeBitReport, Props: with(KeyRunID, "run-1", KeyExpected, "0")},
		{Type: TypeBitError, Props: with(KeyCase, "3", KeyInternallyResolvable, "true", KeyDescription, "d",
			KeyChecksumContent, "c", KeyChecksumStore, "s", KeyChecksumManifest, "i", KeyChecksumAudit, "a", KeyBitStoreType, "AMAZON_S3")},
		{Type: TypeAudit, Props: with(KeyAction, "ADD_CONTENT", KeyDateTime, "1709647629123", KeyContentSize, "42",
			KeyContentProperties, `{"a":"1","b":"x y"}`, KeySpaceACLs, `{"acl-user":"READ"}`, "content-range", "0-1")},
		{Type: TypeNoop, Attempts: 1, Props: map[string]string{"anything": "goes"}},
		{Type: TypeStorageStats, Props: with(KeyRunID, "run-1", KeyStatsMarker, "a/b", KeyStatsItems, "1000",
			KeyStatsBytes, "9007199254740993", KeyStatsStarted, "1709647629123")},
		{Type: TypeStorageStats, Attempts: 1, Props: map[string]string{KeyAccount: "a", KeyStoreID: "1", KeySpaceID: "s"}},
	}
	for _, tk := range tasks {
		t.Run(string(tk.Type), func(t *testing.T) {
			back, err := viewRoundTrip(tk)
			if err != nil {
				t.Fatal(err)
			}
			if !sameTask(back, tk) {
				t.Errorf("round trip =\n %#v\nwant\n %#v", back, tk)
			}
		})
	}
}

func TestAuditView(t *testing.T) {
	tk := New(TypeAudit, map[string]string{
		KeyAccount: "acme", KeyStoreID: "1", KeySpaceID: "s", KeyContentID: "c",
		KeyAction: "SET_CONTENT_PROPERTIES", KeyUserID: "bob", KeyDateTime: "1709647629123",
		KeyContentSize: "9007199254740993", KeyContentChecksum: "md5", KeyContentMimetype: "text/plain",
		KeyContentProperties: "{\n  \"color\" : \"blue\",\n  \"creator\" : \"bob\"\n}",
		KeySpaceACLs:         "{acl-bob=WRITE, acl-group-curators=READ}",
		KeyStoreType:         "AMAZON_S3", KeySourceSpaceID: "src", KeySourceContentID: "srcc",
	})
	a, err := AuditFrom(tk)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(9007199254740993)
	want := Audit{
		Account: "acme", StoreID: "1", SpaceID: "s", ContentID: "c",
		Action: ActionSetContentProperties, UserID: "bob",
		DateTime:        time.Date(2024, 3, 5, 14, 7, 9, 123e6, time.UTC),
		ContentChecksum: "md5", ContentMimetype: "text/plain", ContentSize: &size,
		ContentProperties: map[string]string{"color": "blue", "creator": "bob"},
		SpaceACLs:         map[string]string{"acl-bob": "WRITE", "acl-group-curators": "READ"},
		StoreType:         "AMAZON_S3", SourceSpaceID: "src", SourceContentID: "srcc",
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("AuditFrom =\n %#v\nwant\n %#v", a, want)
	}
	out := a.Task()
	if got := out.Get(KeyContentProperties); got != `{"color":"blue","creator":"bob"}` {
		t.Errorf("content-properties written as %q", got)
	}
	if got := out.Get(KeySpaceACLs); got != `{"acl-bob":"WRITE","acl-group-curators":"READ"}` {
		t.Errorf("space-acls written as %q", got)
	}
	again, err := AuditFrom(out)
	if err != nil || !reflect.DeepEqual(again, want) {
		t.Errorf("AuditFrom(Task()) = %#v, %v; want %#v", again, err, want)
	}
	if empty := (Audit{}).Task(); len(empty.Props) != 0 || empty.Type != TypeAudit {
		t.Errorf("zero Audit.Task() = %#v, want an AUDIT task without properties", empty)
	}
}

func TestBitErrorView(t *testing.T) {
	b := BitError{Account: "a", StoreID: "1", SpaceID: "s", ContentID: "c", Case: 7, InternallyResolvable: true,
		ContentChecksum: "cc", StorageChecksum: "ss", IndexChecksum: "ii", AuditChecksum: "aa", Attempts: 1}
	tk := b.Task()
	wantProps := map[string]string{KeyAccount: "a", KeyStoreID: "1", KeySpaceID: "s", KeyContentID: "c",
		KeyCase: "7", KeyInternallyResolvable: "true", KeyChecksumContent: "cc", KeyChecksumStore: "ss",
		KeyChecksumManifest: "ii", KeyChecksumAudit: "aa"}
	if !maps.Equal(tk.Props, wantProps) || tk.Attempts != 1 {
		t.Errorf("Task() = %#v, want props %v", tk, wantProps)
	}
	back, err := BitErrorFrom(tk)
	if err != nil || !reflect.DeepEqual(back, b) {
		t.Errorf("BitErrorFrom = %#v, %v; want %#v", back, err, b)
	}
}

func TestBitReportExpectedOptional(t *testing.T) {
	r := BitReport{Account: "a", StoreID: "1", SpaceID: "s"}
	if _, ok := r.Task().Props[KeyExpected]; ok {
		t.Error("nil Expected written")
	}
	r.Expected = new(int64(0))
	if got := r.Task().Get(KeyExpected); got != "0" {
		t.Errorf("Expected 0 written as %q", got)
	}
}

func TestViewErrors(t *testing.T) {
	dup := map[string]string{KeyAccount: "a", KeyStoreID: "1", KeyDestStoreID: "2", KeySpaceID: "s"}
	audit := map[string]string{KeyAccount: "a", KeyStoreID: "1", KeySpaceID: "s", KeyContentID: "c",
		KeyAction: "ADD_CONTENT", KeyDateTime: "1"}
	bitErr := map[string]string{KeyAccount: "a", KeyStoreID: "1", KeySpaceID: "s", KeyContentID: "c", KeyCase: "1"}
	edit := func(m map[string]string, kv ...string) map[string]string {
		m = maps.Clone(m)
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "<del>" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	tests := []struct {
		name string
		t    *Task
		want string
	}{
		{"nil", nil, "task: DUP: nil task"},
		{"wrong type", New(TypeBit, dup), `task: DUP: wrong task type "BIT"`},
		{"dup missing dest", New(TypeDup, edit(dup, KeyDestStoreID, "<del>")), `task: DUP: missing property "destStoreId"`},
		{"dup empty account", New(TypeDup, edit(dup, KeyAccount, "")), `task: DUP: missing property "account"`},
		{"bit missing content", New(TypeBit, edit(dup, KeyDestStoreID, "<del>")), `task: BIT: missing property "contentId"`},
		{"report bad expected", New(TypeBitReport, edit(dup, KeyExpected, "x")), `task: BIT_REPORT: property "expected": not an integer: "x"`},
		{"report negative expected", New(TypeBitReport, edit(dup, KeyExpected, "-1")), `task: BIT_REPORT: property "expected": negative: "-1"`},
		{"stats missing space", New(TypeStorageStats, edit(dup, KeySpaceID, "<del>")), `task: STORAGE_STATS: missing property "spaceId"`},
		{"stats negative items", New(TypeStorageStats, edit(dup, KeyStatsItems, "-3")), `task: STORAGE_STATS: property "itemCount": negative: "-3"`},
		{"stats bad started", New(TypeStorageStats, edit(dup, KeyStatsStarted, "yesterday")), `task: STORAGE_STATS: property "startedAt": not an integer: "yesterday"`},
		{"bit error of a run missing case", New(TypeBitError, edit(bitErr, KeyCase, "<del>", KeyRunID, "r1")), `task: BIT_ERROR: missing property "case"`},
		{"bit error case 0", New(TypeBitError, edit(bitErr, KeyCase, "0")), `task: BIT_ERROR: property "case": not a case of the decision table: "0"`},
		{"bit error negative case", New(TypeBitError, edit(bitErr, KeyCase, "-2")), `task: BIT_ERROR: property "case": not a case of the decision table: "-2"`},
		{"bit error bad case", New(TypeBitError, edit(bitErr, KeyCase, "7a")), `task: BIT_ERROR: property "case": not an integer: "7a"`},
		{"bit error bad bool", New(TypeBitError, edit(bitErr, KeyInternallyResolvable, "maybe")), `task: BIT_ERROR: property "internallyResolvable": not a boolean: "maybe"`},
		{"audit bad size", New(TypeAudit, edit(audit, KeyContentSize, "abc")), `task: AUDIT: property "content-size": not an integer: "abc"`},
		{"audit missing action", New(TypeAudit, edit(audit, KeyAction, "<del>")), `task: AUDIT: missing property "action"`},
		{"audit unknown action", New(TypeAudit, edit(audit, KeyAction, "GET_CONTENT")), `task: AUDIT: property "action": unknown action "GET_CONTENT"`},
		{"audit content action needs content", New(TypeAudit, edit(audit, KeyContentID, "<del>")), `task: AUDIT: missing property "contentId"`},
		{"audit missing date", New(TypeAudit, edit(audit, KeyDateTime, "<del>")), `task: AUDIT: missing property "date-time"`},
		{"audit bad date", New(TypeAudit, edit(audit, KeyDateTime, "2024-03-05")), `task: AUDIT: property "date-time": not an integer (epoch milliseconds): "2024-03-05"`},
		{"audit bad content properties", New(TypeAudit, edit(audit, KeyContentProperties, `{"a":1}`)), `task: AUDIT: property "content-properties": not a JSON object of strings: "{\"a\":1}"`},
		{"audit null content properties", New(TypeAudit, edit(audit, KeyContentProperties, `null`)), `task: AUDIT: property "content-properties": not a JSON object`},
		{"audit bad acls", New(TypeAudit, edit(audit, KeySpaceACLs, `READ`)), `task: AUDIT: property "space-acls": neither a JSON object`},
		{"audit bad java acls", New(TypeAudit, edit(audit, KeySpaceACLs, `{acl-x}`)), `task: AUDIT: property "space-acls": entry "acl-x" has no '='`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			switch {
			case tt.t == nil:
				_, err = DupFrom(nil)
			case tt.name == "wrong type":
				_, err = DupFrom(tt.t)
			default:
				_, err = viewRoundTrip(tt.t)
			}
			if err == nil {
				t.Fatal("want error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%v does not wrap ErrInvalid", err)
			}
			if got := err.Error(); len(got) < len(tt.want) || got[:len(tt.want)] != tt.want {
				t.Errorf("error = %q, want prefix %q", got, tt.want)
			}
		})
	}
}

func TestSpaceLevelAuditAndDup(t *testing.T) {
	a, err := AuditFrom(New(TypeAudit, map[string]string{KeyAccount: "a", KeyStoreID: "1", KeySpaceID: "s",
		KeyAction: "CREATE_SPACE", KeyDateTime: "0", KeySpaceACLs: "{}"}))
	if err != nil {
		t.Fatal(err)
	}
	if a.ContentID != "" || a.SpaceACLs == nil || len(a.SpaceACLs) != 0 || !a.DateTime.Equal(time.UnixMilli(0)) {
		t.Errorf("AuditFrom = %#v", a)
	}
	d, err := DupFrom(New(TypeDup, map[string]string{KeyAccount: "a", KeyStoreID: "1", KeyDestStoreID: "2", KeySpaceID: "s"}))
	if err != nil || d.ContentID != "" {
		t.Errorf("DupFrom space-level = %#v, %v", d, err)
	}
	for _, act := range Actions {
		if !act.Known() {
			t.Errorf("%s not Known", act)
		}
	}
	if Action("GET_CONTENT").Known() || ActionCreateSpace.ContentAction() || !ActionCopyContent.ContentAction() {
		t.Error("Action.Known/ContentAction wrong")
	}
}

func sameAudit(a, b Audit) bool {
	a.DateTime, b.DateTime = a.DateTime.UTC(), b.DateTime.UTC()
	return reflect.DeepEqual(a, b)
}

// TestBitErrorJavaShape: the Java Mill's BIT_ERROR (no case, no run)
// reads with Case 0 and is written back without a case.
func TestBitErrorJavaShape(t *testing.T) {
	in := New(TypeBitError, map[string]string{KeyAccount: "a", KeyStoreID: "1", KeySpaceID: "s", KeyContentID: "c",
		KeyDescription: "Checksums do not match", KeyBitStoreType: "AMAZON_S3", KeyChecksumStore: "x"})
	x, err := BitErrorFrom(in)
	if err != nil || x.Case != 0 || x.RunID != "" || x.StoreType != "AMAZON_S3" {
		t.Fatalf("%+v %v", x, err)
	}
	if out := x.Task(); out.Get(KeyCase) != "" {
		t.Errorf("written back with case %q", out.Get(KeyCase))
	}
}
