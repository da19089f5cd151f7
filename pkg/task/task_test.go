package task_test

import (
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/task"
)

// A hostile 10 KiB content ID is shortened in log attributes and in String.
func TestLogAttrsAndStringShortenLongIDs(t *testing.T) {
	long := strings.Repeat("d/", 5<<10)
	tk := task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "s", ContentID: long}.Task()
	attrs := tk.LogAttrs()
	var got string
	for i := 0; i+1 < len(attrs); i += 2 {
		if attrs[i] == "content_id" {
			got, _ = attrs[i+1].(string)
		}
	}
	if want := long[:200] + "…(10240 bytes)"; got != want {
		t.Errorf("content_id attribute %.60q… (%d bytes), want %d bytes", got, len(got), len(want))
	}
	if s := tk.String(); len(s) > 300 || !strings.HasSuffix(s, `"…(10240 bytes)`) {
		t.Errorf("String() is %d bytes: %.300s", len(s), s)
	}
	short := task.Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "s", ContentID: "a b"}.Task()
	if s := short.String(); !strings.HasSuffix(s, `contentId="a b"`) {
		t.Errorf("String() = %s", s)
	}
}
