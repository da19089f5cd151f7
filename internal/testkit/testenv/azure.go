package testenv

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/service"
)

// AzuriteVar names the variable holding the Azurite blob endpoint
// (localstack/env.sh sets it; `make up` starts Azurite there).
const AzuriteVar = "MILL_AZURITE_BLOB_URL"

// AzuriteAccount and AzuriteKey are Azurite's well-known development
// account (public, documented by Azurite; it opens nothing but the
// emulator).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// AzuriteURL returns the Azurite blob endpoint of the account
// (http://127.0.0.1:10000/devstoreaccount1 unless AzuriteVar says
// otherwise), failing (CI) or skipping the test when nothing answers.
func AzuriteURL(t testing.TB) string {
	t.Helper()
	integration(t)
	ep := strings.TrimSuffix(os.Getenv(AzuriteVar), "/")
	if ep == "" {
		ep = "http://127.0.0.1:10000/" + AzuriteAccount
	}
	RequireLoopback(t, AzuriteVar, ep)
	if err := probe(ep); err != nil {
		Unavailable(t, "Azurite (Azure Blob emulator) at "+ep, err)
	}
	return ep
}

// AzuriteConnectionString is the connection string of the emulator's
// account at endpoint ep.
func AzuriteConnectionString(ep string) string {
	return fmt.Sprintf("DefaultEndpointsProtocol=http;AccountName=%s;AccountKey=%s;BlobEndpoint=%s;", AzuriteAccount, AzuriteKey, ep)
}

// AzureContainer creates a fresh container on Azurite, deleted (with its
// blobs) after the test, and returns the emulator's endpoint and the
// container's name.
func AzureContainer(t testing.TB) (ep, name string) {
	t.Helper()
	ep = AzuriteURL(t)
	svc, err := service.NewClientFromConnectionString(AzuriteConnectionString(ep), nil)
	if err != nil {
		t.Fatal(err)
	}
	name = Prefix(t) + "store" // lower-case letters, digits and one hyphen
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := svc.CreateContainer(ctx, name, nil); err != nil {
		t.Fatalf("create container %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := svc.DeleteContainer(ctx, name, nil); err != nil {
			t.Errorf("delete container %s: %v", name, err)
		}
	})
	return ep, name
}
