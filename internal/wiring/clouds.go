package wiring

import (
	"context"
	"fmt"
	"os"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/azstore"
	"github.com/millfleet/mill/pkg/storage/gcsstore"
	"github.com/millfleet/mill/pkg/stores"
)

// openGCS opens a gcs store with gcsstore, on a client of its own.
func openGCS(ctx context.Context, s stores.Store) (storage.Provider, error) {
	c, err := gcsstore.NewClient(ctx, gcsstore.ClientConfig{
		Endpoint: s.Endpoint, AllowInsecureEndpoint: s.AllowInsecureEndpoint,
		ServiceAccountFile: s.ServiceAccountFile, Anonymous: s.Anonymous,
	})
	if err != nil {
		return nil, err
	}
	return gcsstore.New(c, gcsstore.Config{Bucket: s.Bucket, Prefix: s.Prefix})
}

// openAzure opens an azure store with azstore, reading its connection
// string from the environment variable the registry names.
func openAzure(ctx context.Context, s stores.Store) (storage.Provider, error) {
	cc := azstore.ClientConfig{
		StorageAccount: s.StorageAccount, Container: s.Container,
		Endpoint: s.Endpoint, AllowInsecureEndpoint: s.AllowInsecureEndpoint,
		ManagedIdentity: s.ManagedIdentity, ManagedIdentityClientID: s.ManagedIdentityClientID,
	}
	if s.ConnectionStringEnv != "" {
		if cc.ConnectionString = os.Getenv(s.ConnectionStringEnv); cc.ConnectionString == "" {
			return nil, fmt.Errorf("the environment variable %s (connectionStringEnv) is not set or empty", s.ConnectionStringEnv)
		}
	}
	c, err := azstore.NewClient(ctx, cc)
	if err != nil {
		return nil, err
	}
	return azstore.New(c, azstore.Config{Prefix: s.Prefix})
}
