package wiring

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

// TestOpenCloudStores: the registry's gcs and azure stores open on the
// emulators through NewOpener, the azure one with the connection string
// read from the environment variable it names, and hold content.
func TestOpenCloudStores(t *testing.T) {
	gcsEP := testenv.FakeGCS(t)
	bucket := testenv.GCSBucket(t, testenv.GCSClient(t, gcsEP))
	azEP, container := testenv.AzureContainer(t)
	t.Setenv("MILL_TEST_AZURE_CONN", testenv.AzuriteConnectionString(azEP))
	doc := `{"accounts": [{"id": "a", "stores": [
  {"id": "p", "primary": true, "kind": "fs", "root": "` + t.TempDir() + `"},
  {"id": "g", "kind": "gcs", "bucket": "` + bucket + `", "prefix": "mill/", "endpoint": "` + gcsEP + `", "anonymous": true},
  {"id": "z", "kind": "azure", "storageAccount": "` + testenv.AzuriteAccount + `", "container": "` + container + `", "prefix": "mill/", "connectionStringEnv": "MILL_TEST_AZURE_CONN"},
  {"id": "unset", "kind": "azure", "storageAccount": "` + testenv.AzuriteAccount + `", "container": "` + container + `", "prefix": "other/", "connectionStringEnv": "MILL_TEST_AZURE_UNSET"}]}]}`
	reg, err := stores.Parse("accounts.json", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	o := NewOpener(reg, nil, false)
	for id, kind := range map[string]storage.Kind{"g": storage.KindGCS, "z": storage.KindAzure} {
		p, err := o.Open(t.Context(), "a", id)
		if err != nil {
			t.Fatalf("open %s: %v", id, err)
		}
		if p.Kind() != kind {
			t.Errorf("store %s: kind %s, want %s", id, p.Kind(), kind)
		}
		if err := p.CreateSpace(t.Context(), "space"); err != nil {
			t.Fatal(err)
		}
		data := []byte("content of store " + id)
		if _, err := p.Put(t.Context(), "space", "item", bytes.NewReader(data), storage.PutOptions{Size: int64(len(data))}); err != nil {
			t.Fatal(err)
		}
		rc, _, err := p.Get(t.Context(), "space", "item")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if !bytes.Equal(got, data) {
			t.Errorf("store %s: read %q, want %q", id, got, data)
		}
	}
	if _, err := o.Open(t.Context(), "a", "unset"); err == nil || !strings.Contains(err.Error(), "MILL_TEST_AZURE_UNSET") {
		t.Errorf("open a store whose connection string variable is unset: %v, want an error naming it", err)
	}
}
