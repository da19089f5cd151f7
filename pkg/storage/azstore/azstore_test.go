package azstore

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/storagetest"
)

// Small sizes so the suite's large items (11 MiB) are staged in blocks,
// several at once.
var testConfig = Config{Upload: storage.Upload{Threshold: 1 << 20, Transfer: storage.Transfer{PartSize: 1 << 20}}}

func TestConformance(t *testing.T) {
	ep, name := testenv.AzureContainer(t)
	c, err := NewClient(t.Context(), ClientConfig{StorageAccount: testenv.AzuriteAccount, Container: name, ConnectionString: testenv.AzuriteConnectionString(ep)})
	if err != nil {
		t.Fatal(err)
	}
	storagetest.Run(t, storagetest.Harness{
		LargeSize:         11 << 20,
		MaxPropertiesSize: MaxMetadataSize,
		New: func(t *testing.T) storagetest.Fixture {
			cfg := testConfig
			cfg.Prefix = "stores/" + testenv.Unique() + "/"
			s, err := New(c, cfg)
			if err != nil {
				t.Fatal(err)
			}
			// rewrite writes other bytes under the item's name keeping its
			// metadata (the recorded MD5), as another tool would with Put
			// Blob, which computes the Content-MD5 of what it stores.
			rewrite := func(t *testing.T, space, id string, change func([]byte) []byte) {
				key, _ := s.layout.ContentKey(space, id)
				ctx := t.Context()
				bc := c.NewBlobClient(key)
				d, err := bc.DownloadStream(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(d.Body)
				d.Body.Close()
				_, err = c.NewBlockBlobClient(key).Upload(ctx, nopCloser{bytes.NewReader(change(b))}, &blockblob.UploadOptions{
					Metadata: d.Metadata, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: d.ContentType},
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			return storagetest.Fixture{
				Provider:        s,
				MaxContentIDLen: s.MaxContentIDLen,
				Corrupt: func(t *testing.T, space, id string) {
					rewrite(t, space, id, func(b []byte) []byte { b[0] ^= 1; return b })
				},
				Replace: func(t *testing.T, space, id string, data []byte) {
					rewrite(t, space, id, func([]byte) []byte { return data })
				},
			}
		}})
}

// TestNameEncoding: the blob-name encoding is one to one and keeps
// byte-wise order, so listings of encoded names are in ID order.
func TestNameEncoding(t *testing.T) {
	ids := []string{"", "a", "[", `\`, "[0", "[1", `a\b`, "a[b", "a]b", "aZb", "a\\", "a[", "a[0", `[\[`, "]", "Z", `\\`, "[[", "é[", "\x7f"}
	for _, a := range ids {
		ea := encodeName(a)
		if strings.Contains(ea, `\`) {
			t.Errorf("encodeName(%q) = %q holds a backslash", a, ea)
		}
		if back, ok := decodeName(ea); !ok || back != a {
			t.Errorf("decodeName(encodeName(%q) = %q) = %q, %v", a, ea, back, ok)
		}
		for _, b := range ids {
			if (a < b) != (ea < encodeName(b)) {
				t.Errorf("order: %q < %q is %v, encoded %q < %q is %v", a, b, a < b, ea, encodeName(b), ea < encodeName(b))
			}
		}
	}
	for _, foreign := range []string{`a\b`, "a[", "a[2"} {
		if _, ok := decodeName(foreign); ok {
			t.Errorf("decodeName(%q) accepted a name the store cannot have made", foreign)
		}
	}
}
