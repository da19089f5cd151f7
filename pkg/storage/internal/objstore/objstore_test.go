package objstore

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

func TestTrashNames(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, reason := range []string{storage.ReplacedByDelete, storage.ReplacedByOverwrite, storage.ReplacedByProperties} {
		name := TrashName(at, "0123456789abcdef0123", reason)
		got, r, ok := ParseTrashName(name)
		if !ok || !got.Equal(at) || r != reason {
			t.Errorf("ParseTrashName(%q) = %v, %q, %v", name, got, r, ok)
		}
	}
	for _, bad := range []string{"", "x", "20260102T030405.000000006Z-0123456789ABCDEF.deleted", "20260102T030405.000000006Z-0123456789abcdef.renamed", "2026x102T030405.000000006Z-0123456789abcdef.deleted"} {
		if _, _, ok := ParseTrashName(bad); ok {
			t.Errorf("ParseTrashName(%q) accepted a name TrashName cannot make", bad)
		}
	}
	if a, b := TrashItemPrefix("p/", "s", "a/b"), TrashItemPrefix("p/", "s", "a/c"); a == b || !strings.HasPrefix(a, "p/.mill-trash/s/") || strings.Count(a, "/") != 4 {
		t.Errorf("TrashItemPrefix: %q, %q", a, b)
	}
}

func TestASCIIJSON(t *testing.T) {
	in := map[string]string{"ключ": "значение ✓ 🎉", "q": `"\`}
	s, err := ASCIIJSON(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range s {
		if r > 0x7e || r < 0x20 {
			t.Fatalf("%q holds %q", s, r)
		}
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(s), &back); err != nil || back["ключ"] != in["ключ"] || back["q"] != in["q"] {
		t.Errorf("round trip: %v, %v", back, err)
	}
}

func TestHead(t *testing.T) {
	for _, tc := range []struct {
		data      string
		size, thr int64
		whole     bool
	}{
		{"abc", 3, 10, true},
		{"abc", -1, 10, true},
		{"abcdefghijk", -1, 10, false},
		{"abcdefghij", -1, 10, true}, // exactly the threshold, size unknown: the read past it saw the end
		{"abcdefghij", 10, 10, true},
		{"abcdefghijk", 10, 10, false}, // more than promised: streamed, and the size check fails there
		{"ab", 5, 10, true},            // fewer than promised: whole, and the size check fails there
	} {
		head, whole, rest, err := Head(t.Context(), strings.NewReader(tc.data), tc.size, tc.thr)
		if err != nil || whole != tc.whole {
			t.Errorf("Head(%q, %d, %d): whole %v, %v", tc.data, tc.size, tc.thr, whole, err)
			continue
		}
		got := string(head)
		if !whole {
			b, _ := io.ReadAll(rest)
			got = string(b)
		}
		if got != tc.data {
			t.Errorf("Head(%q, %d, %d): content %q", tc.data, tc.size, tc.thr, got)
		}
	}
	if SizeErr(3, -1) != nil || SizeErr(3, 3) != nil {
		t.Error("SizeErr of a size as promised")
	}
	// The provider's Wrap names the provider: the error does not.
	if err := SizeErr(3, 4); err == nil || err.Error() != "read 3 bytes, the put promised 4" {
		t.Errorf("SizeErr(3, 4) = %v", err)
	}
}

func TestMetadata(t *testing.T) {
	m := Metadata{MD5: "md5", Props: "props", CRC64: "crc", Limit: 100, What: "test metadata", ASCII: true}
	got, err := m.Build("d41d8cd98f00b204e9800998ecf8427e", "", map[string]string{"ключ": "v"})
	if err != nil || got["md5"] != "d41d8cd98f00b204e9800998ecf8427e" || got["props"] != `{"\u043a\u043b\u044e\u0447":"v"}` || len(got) != 2 {
		t.Errorf("Build: %v, %v", got, err)
	}
	if p := ParseProps(got["props"]); p["ключ"] != "v" || len(p) != 1 {
		t.Errorf("ParseProps: %v", p)
	}
	if p := ParseProps(""); p == nil || len(p) != 0 {
		t.Errorf("ParseProps of nothing: %v", p)
	}
	if err := m.CheckProps("", map[string]string{"k": strings.Repeat("x", 60)}); !errors.Is(err, storage.ErrPropertiesTooLarge) || !strings.Contains(err.Error(), "test metadata (limit 100)") {
		t.Errorf("CheckProps of too much: %v", err)
	}
	info := Attrs{MD5: "ABC", Size: 3, ContentMD5: make([]byte, 16), Props: `{"a":"b"}`}.Info("id")
	if info.Checksum != "abc" || info.MimeType != storage.DefaultMimeType || info.ProviderChecksum == "" || info.Properties["a"] != "b" || info.ContentID != "id" {
		t.Errorf("Attrs.Info: %+v", info)
	}
}
