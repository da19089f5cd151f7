package storage_test

import (
	"context"
	"errors"
	"hash/crc64"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

func TestCRC64NVME(t *testing.T) {
	// The CRC-64/NVME check value (the CRC of "123456789").
	if got := crc64.Checksum([]byte("123456789"), storage.CRC64NVMETable); got != 0xae8b14860a799888 {
		t.Fatalf("CRC64NVME check value = %#x", got)
	}
	if got := storage.ProviderCRC64NVME(0xae8b14860a799888); got != "crc64nvme:rosUhgp5mIg=" {
		t.Fatalf("ProviderCRC64NVME = %q", got)
	}
}

func TestValidateIDs(t *testing.T) {
	for _, id := range []string{"a", "photos", "x-space", "Space_1", strings.Repeat("s", storage.MaxSpaceIDLen)} {
		if err := storage.ValidateSpaceID(id); err != nil {
			t.Errorf("ValidateSpaceID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", ".x", "a/b", `a\b`, "a\x00", "\xff", strings.Repeat("s", storage.MaxSpaceIDLen+1)} {
		if err := storage.ValidateSpaceID(id); !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("ValidateSpaceID(%q): %v, want ErrInvalidID", id, err)
		}
	}
	for _, id := range []string{"a", "a/b/c", "../x", "/abs", "ü 🎉 +%", strings.Repeat("c", storage.MaxContentIDLen)} {
		if err := storage.ValidateContentID(id); err != nil {
			t.Errorf("ValidateContentID(%q): %v", id, err)
		}
	}
	for _, id := range []string{"", "a\x00b", "tab\t", "del\x7f", "\xc3", strings.Repeat("c", storage.MaxContentIDLen+1)} {
		if err := storage.ValidateContentID(id); !errors.Is(err, storage.ErrInvalidID) {
			t.Errorf("ValidateContentID(%q): %v, want ErrInvalidID", id, err)
		}
	}
}

func TestMD5Helpers(t *testing.T) {
	sum, n, err := storage.MD5Hex(strings.NewReader("hello"))
	if err != nil || n != 5 || sum != "5d41402abc4b2a76b9719d911017c592" {
		t.Fatalf("MD5Hex = %s, %d, %v", sum, n, err)
	}
	if got, err := storage.NormalizeMD5(" 5D41402ABC4B2A76B9719D911017C592 "); err != nil || got != sum {
		t.Errorf("NormalizeMD5 = %q, %v", got, err)
	}
	if _, err := storage.NormalizeMD5("xyz"); err == nil {
		t.Error("NormalizeMD5(xyz): nil error")
	}
	if alg, v, ok := storage.SplitProviderChecksum(storage.ProviderMD5(sum)); !ok || alg != "md5" || v != sum {
		t.Errorf("SplitProviderChecksum = %q %q %v", alg, v, ok)
	}
}

func TestProperties(t *testing.T) {
	a := map[string]string{"creator": "alice", "content-checksum": "x", "Content-Size": "1"}
	b := map[string]string{"creator": "alice", "content-mimetype": "text/plain"}
	if !storage.PropertiesEqual(a, b) {
		t.Error("PropertiesEqual ignores system properties: got false")
	}
	if storage.PropertiesEqual(a, map[string]string{"creator": "bob"}) {
		t.Error("PropertiesEqual with different user properties: got true")
	}
	if !storage.PropertiesEqual(nil, map[string]string{}) {
		t.Error("nil and empty differ")
	}
	info := &storage.Info{Checksum: "5d41402abc4b2a76b9719d911017c592", Size: 5, MimeType: "text/plain", Properties: map[string]string{"k": "v", "content-size": "stale"}}
	got := storage.Properties(info)
	want := map[string]string{"k": "v", "content-checksum": info.Checksum, "content-md5": info.Checksum, "content-mimetype": "text/plain", "content-size": "5"}
	if len(got) != len(want) {
		t.Fatalf("Properties = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Properties[%q] = %q, want %q", k, got[k], v)
		}
	}
}

func seq(ids ...string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, id := range ids {
			if !yield(id, nil) {
				return
			}
		}
	}
}

func TestMergeSorted(t *testing.T) {
	var got []string
	for m, err := range storage.MergeSorted(seq("a", "a/b", "c", "e"), seq("a-", "a/b", "d", "e", "f")) {
		if err != nil {
			t.Fatal(err)
		}
		tag := "A"
		if m.Both {
			tag = "AB"
		} else if m.InB {
			tag = "B"
		}
		got = append(got, tag+":"+m.ID)
	}
	want := []string{"A:a", "B:a-", "AB:a/b", "A:c", "B:d", "AB:e", "B:f"}
	if !slices.Equal(got, want) {
		t.Errorf("MergeSorted = %q, want %q", got, want)
	}
	var err error
	for _, e := range storage.MergeSorted(seq("b", "a"), seq()) {
		err = e
	}
	if err == nil {
		t.Error("MergeSorted of an unsorted listing: no error")
	}
}

// pagedProvider serves ListContent from a sorted slice.
type pagedProvider struct {
	storage.Provider
	ids   []string
	calls int
}

func (p *pagedProvider) ListContent(_ context.Context, _, after string, limit int) ([]string, bool, error) {
	p.calls++
	i, _ := slices.BinarySearch(p.ids, after)
	if i < len(p.ids) && p.ids[i] == after {
		i++
	}
	end := min(i+limit, len(p.ids))
	return p.ids[i:end], end < len(p.ids), nil
}

func TestWalk(t *testing.T) {
	p := &pagedProvider{ids: []string{"a", "b", "c", "d", "e", "f", "g"}}
	var got []string
	for id, err := range storage.Walk(context.Background(), p, "s", "b", 2) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, id)
	}
	if want := []string{"c", "d", "e", "f", "g"}; !slices.Equal(got, want) {
		t.Errorf("Walk = %q, want %q", got, want)
	}
	if p.calls != 3 {
		t.Errorf("Walk made %d ListContent calls, want 3", p.calls)
	}
}
