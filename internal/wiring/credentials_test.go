package wiring

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/stores"
)

// TestOpenerSignsWithTheStoreProfile: the binaries' opener reaches a store
// on a custom endpoint with the named profile of the shared credentials
// file (through s3store, as the processors do); the local endpoint sees
// that profile's key and never the ambient one.
func TestOpenerSignsWithTheStoreProfile(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Length", "0")
		w.Header().Set("Last-Modified", "Mon, 04 Mar 2024 10:00:00 GMT")
	}))
	defer srv.Close()
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.WriteFile(creds, []byte("[archive]\naws_access_key_id = AKIAARCHIVEKEY000001\naws_secret_access_key = s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-config"))
	reg, err := stores.Parse("accounts.json", []byte(`{"accounts":[{"id":"acme","stores":[
	 {"id":"1","primary":true,"kind":"s3","bucket":"archive","endpoint":"`+srv.URL+`","profile":"archive"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	base := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIAAMBIENTKEY000001", "s", "")}
	p, err := NewOpener(reg, &base, false).Open(context.Background(), "acme", "1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Head(context.Background(), "space", "item"); err != nil && !strings.Contains(err.Error(), storage.ErrNotFound.Error()) {
		t.Fatalf("head: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatal("no request reached the endpoint")
	}
	for _, a := range auths {
		if !strings.Contains(a, "Credential=AKIAARCHIVEKEY000001/") {
			t.Errorf("request signed %q; want the archive profile's key", a)
		}
	}
}
