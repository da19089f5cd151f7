package azstore

import (
	"strings"
	"testing"
)

const devKey = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

// TestNewClientRules: the endpoint rules of S3 stores hold for the
// endpoint a connection string names, the string must be of the store's
// account, one way in is named, and no error quotes the secret.
func TestNewClientRules(t *testing.T) {
	cs := func(s string) string { return s + ";AccountKey=" + devKey }
	for _, tc := range []struct {
		name string
		cc   ClientConfig
		want string // "" = accepted
	}{
		{"azurite", ClientConfig{StorageAccount: "devstoreaccount1", Container: "c", ConnectionString: cs("AccountName=devstoreaccount1;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1")}, ""},
		{"azure", ClientConfig{StorageAccount: "acct", Container: "c", ConnectionString: cs("DefaultEndpointsProtocol=https;AccountName=acct;EndpointSuffix=core.windows.net")}, ""},
		{"managed identity", ClientConfig{StorageAccount: "acct", Container: "c", ManagedIdentity: true}, ""},
		{"plain http elsewhere", ClientConfig{StorageAccount: "acct", Container: "c", ConnectionString: cs("AccountName=acct;BlobEndpoint=http://blob.example.org/acct")}, "plain http"},
		{"http protocol to Azure", ClientConfig{StorageAccount: "acct", Container: "c", ConnectionString: cs("DefaultEndpointsProtocol=http;AccountName=acct")}, "plain http"},
		{"metadata address", ClientConfig{StorageAccount: "acct", Container: "c", ConnectionString: cs("AccountName=acct;BlobEndpoint=https://169.254.169.254/acct")}, "metadata"},
		{"other account", ClientConfig{StorageAccount: "mine", Container: "c", ConnectionString: cs("AccountName=theirs")}, "storage account"},
		{"other endpoint", ClientConfig{StorageAccount: "acct", Container: "c", Endpoint: "https://acct.blob.example.org", ConnectionString: cs("AccountName=acct")}, "not the store's endpoint"},
		{"both ways in", ClientConfig{StorageAccount: "acct", Container: "c", ManagedIdentity: true, ConnectionString: cs("AccountName=acct")}, "one way in"},
		{"no way in", ClientConfig{StorageAccount: "acct", Container: "c"}, "one way in"},
		{"no key", ClientConfig{StorageAccount: "acct", Container: "c", ConnectionString: "AccountName=acct"}, "AccountKey"},
		{"garbage", ClientConfig{StorageAccount: "acct", Container: "c", ConnectionString: "just some words"}, "key=value"},
		{"managed identity over http", ClientConfig{StorageAccount: "acct", Container: "c", ManagedIdentity: true, Endpoint: "http://acct.blob.example.org"}, "plain http"},
	} {
		_, err := NewClient(t.Context(), tc.cc)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), devKey[:20]):
			t.Errorf("%s: the error quotes the account key: %v", tc.name, err)
		}
	}
}
