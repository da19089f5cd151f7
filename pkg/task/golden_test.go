package task

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/messages")

const goldenDir = "../../testdata/messages"

// goldenTasks are written by Encode to testdata/messages/NAME.json and
// NAME.properties (with the date of fixedTime).
func goldenTasks() map[string]*Task {
	size := int64(1048576)
	return map[string]*Task{
		"dup": Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos",
			ContentID: "2024/holiday: beach=sunny.jpg"}.Task(),
		"dup-space": Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos", Attempts: 2}.Task(),
		"bit": Bit{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "dir/Ünïcødé 文件.txt",
			RunID: "2024-03-05T14:07:09Z"}.Task(),
		"bit-report": BitReport{Account: "acme", StoreID: "1", SpaceID: "photos",
			RunID: "2024-03-05T14:07:09Z", Expected: new(int64(1234))}.Task(),
		"bit-error": BitError{Account: "acme", StoreID: "1", SpaceID: "photos", ContentID: "a/b.jpg",
			RunID: "2024-03-05T14:07:09Z", Description: "storage checksum differs: index=abc, store=def",
			StoreType: "AMAZON_S3", Case: 4, InternallyResolvable: true,
			ContentChecksum: "0cc175b9c0f1b6a831c399e269772661", StorageChecksum: "92eb5ffee6ae2fec3ad71c777531578f",
			IndexChecksum: "0cc175b9c0f1b6a831c399e269772661", AuditChecksum: "0cc175b9c0f1b6a831c399e269772661"}.Task(),
		"audit-add-content": Audit{Account: "acme", StoreID: "1", SpaceID: "photos",
			ContentID: "dir/Ünïcødé 文件.txt", Action: ActionAddContent, UserID: "bob@example.org",
			DateTime:        time.UnixMilli(1709647629123).UTC(),
			ContentChecksum: "0cc175b9c0f1b6a831c399e269772661", ContentMimetype: "text/plain; charset=utf-8",
			ContentSize: &size,
			ContentProperties: map[string]string{"creator": "bob@example.org", "note": "a=b: c#d!e",
				"tags": "line one\nline two\ttabbed"},
			StoreType: "AMAZON_S3",
			Extra:     map[string]string{"x custom key": " leading space"}}.Task(),
		"audit-copy-content": Audit{Account: "acme", StoreID: "1", SpaceID: "archive", ContentID: "copy.txt",
			Action: ActionCopyContent, UserID: "bob", DateTime: time.UnixMilli(1709647629000).UTC(),
			SourceSpaceID: "photos", SourceContentID: "orig.txt", StoreType: "AMAZON_S3"}.Task(),
		"audit-set-space-acls": Audit{Account: "acme", StoreID: "1", SpaceID: "photos",
			Action: ActionSetSpaceACLs, UserID: "admin", DateTime: time.UnixMilli(1709647629000).UTC(),
			SpaceACLs: map[string]string{"acl-bob": "WRITE", "acl-group-curators": "READ"}}.Task(),
		"storage-stats": StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "20240305T140709Z"}.Task(),
		"storage-stats-continued": StorageStats{Account: "acme", StoreID: "1", SpaceID: "photos", RunID: "20240305T140709Z",
			Marker: "2024/img-0999.jpg", Items: 1000, Bytes: 52428800, Started: time.UnixMilli(1709647629000).UTC()}.Task(),
		"noop-control-chars": Noop{Attempts: 1, Extra: map[string]string{
			"ctl": "nul\x00 bell\x07 esc\x1b del\x7f", "nonchars": "\uFFFE\uFFFF", "emoji": "😀"}}.Task(),
	}
}

func TestGolden(t *testing.T) {
	for name, tk := range goldenTasks() {
		for _, f := range []Format{FormatJSON, FormatProperties} {
			path := filepath.Join(goldenDir, name+"."+f.String())
			t.Run(filepath.Base(path), func(t *testing.T) {
				got, err := testOpts.Encode(tk, f)
				if err != nil {
					t.Fatal(err)
				}
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./pkg/task -run TestGolden -update)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("Encode differs from %s:\n got: %q\nwant: %q", path, got, want)
				}
				if !sqsSafe(want) {
					t.Errorf("%s is not SQS-safe", path)
				}
				back, err := Decode(want)
				if err != nil {
					t.Fatal(err)
				}
				if !sameTask(back, tk) {
					t.Errorf("Decode(%s) =\n %#v\nwant\n %#v", path, back, tk)
				}
				if _, err := viewRoundTrip(back); err != nil {
					t.Errorf("typed view of %s: %v", path, err)
				}
			})
		}
	}
}

// TestDuraCloudMessages decodes hand-written messages in the shape
// DuraCloud's Java SQSTaskQueue writes (Properties.store to a Writer: keys in
// hash order, a local-time date comment, pretty-printed JSON content
// properties), which -update never rewrites.
func TestDuraCloudMessages(t *testing.T) {
	tests := []struct {
		file string
		want Audit
	}{
		{"duracloud-audit-add-content.properties", Audit{
			Account: "acme", StoreID: "4", SpaceID: "photos", ContentID: "dir/Ünïcødé 文件.txt",
			Action: ActionAddContent, UserID: "bob", DateTime: time.UnixMilli(1709647629123).UTC(),
			ContentChecksum: "0cc175b9c0f1b6a831c399e269772661", ContentMimetype: "text/plain",
			ContentSize: new(int64(1)),
			ContentProperties: map[string]string{
				"creator": "bob", "tags": "a=b, c:d", "comment": "line1\nline2",
				"duracloud-content-checksum": "0cc175b9c0f1b6a831c399e269772661",
				"url":                        "http://example.org/x?y=z#frag",
			},
			StoreType: "AMAZON_S3",
		}},
		{"duracloud-audit-set-space-acls.properties", Audit{
			Account: "acme", StoreID: "4", SpaceID: "photos", Action: ActionSetSpaceACLs, UserID: "admin",
			DateTime:  time.UnixMilli(1709647629000).UTC(),
			SpaceACLs: map[string]string{"acl-bob": "WRITE", "acl-group-curators": "READ"},
			StoreType: "AMAZON_S3",
		}},
		{"duracloud-audit-continued-lines.properties", Audit{
			Account: "acme", StoreID: "4", SpaceID: "photos", ContentID: "über 😀.txt",
			Action: ActionDeleteContent, UserID: "bob", DateTime: time.UnixMilli(1709647629000).UTC(),
			Extra: map[string]string{"key with spaces": "value: with = separators", "attempts-note": "retried"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(goldenDir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			tk, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			a, err := AuditFrom(tk)
			if err != nil {
				t.Fatal(err)
			}
			if !sameAudit(a, tt.want) {
				t.Errorf("AuditFrom =\n %#v\nwant\n %#v", a, tt.want)
			}
			for _, f := range []Format{FormatJSON, FormatProperties} {
				enc, err := Encode(tk, f)
				if err != nil {
					t.Fatal(err)
				}
				back, err := Decode(enc)
				if err != nil || !sameTask(back, tk) {
					t.Errorf("%v re-encode: %v; %#v want %#v", f, err, back, tk)
				}
			}
		})
	}
}
