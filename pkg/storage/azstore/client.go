package azstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"

	"github.com/millfleet/mill/pkg/endpoint"
)

// ClientConfig says how a store reaches its container (the registry's
// azure store fields; see pkg/stores).
type ClientConfig struct {
	// StorageAccount is the storage account's name (required); a
	// connection string must be of this account.
	StorageAccount string
	// Container is the container's name (required).
	Container string
	// Endpoint is the blob service endpoint; "" is Azure's,
	// https://<account>.blob.core.windows.net. With a connection string
	// the endpoint is the connection string's. Either obeys pkg/endpoint's
	// rules: https, plain http only to a loopback host or with
	// AllowInsecureEndpoint.
	Endpoint              string
	AllowInsecureEndpoint bool
	// ConnectionString, the value of the environment variable the
	// registry names (never the registry's own text): an account key or a
	// SAS token, and the endpoint.
	ConnectionString string
	// ManagedIdentity authenticates with the machine's managed identity
	// (the Azure Instance Metadata Service); ManagedIdentityClientID
	// picks a user-assigned one.
	ManagedIdentity         bool
	ManagedIdentityClientID string
	// Resolver resolves host names for the connection guard (nil: the
	// default resolver).
	Resolver *net.Resolver
}

// NewClient returns the client of the container cc names. Its connections
// never reach a link-local or metadata address (endpoint.HTTPClient's
// dialer); only the managed identity credential talks to the metadata
// service, with its own client.
func NewClient(_ context.Context, cc ClientConfig) (*container.Client, error) {
	if cc.StorageAccount == "" || cc.Container == "" {
		return nil, errors.New("azstore: a storage account and a container are required")
	}
	if (cc.ConnectionString != "") == cc.ManagedIdentity {
		return nil, errors.New("azstore: name one way in: a connection string or the managed identity")
	}
	opts := &container.ClientOptions{ClientOptions: azcore.ClientOptions{
		Transport: &http.Client{Transport: endpoint.HTTPClient(cc.Resolver).GetTransport()},
	}}
	if cc.ManagedIdentity {
		ep := cc.Endpoint
		if ep == "" {
			ep = "https://" + cc.StorageAccount + ".blob.core.windows.net"
		}
		u, err := containerURL(ep, cc)
		if err != nil {
			return nil, err
		}
		var mo azidentity.ManagedIdentityCredentialOptions
		if cc.ManagedIdentityClientID != "" {
			mo.ID = azidentity.ClientID(cc.ManagedIdentityClientID)
		}
		cred, err := azidentity.NewManagedIdentityCredential(&mo)
		if err != nil {
			return nil, fmt.Errorf("azstore: managed identity: %w", err)
		}
		return container.NewClient(u, cred, opts)
	}
	cs, err := parseConnectionString(cc.ConnectionString)
	if err != nil {
		return nil, err
	}
	if !strings.EqualFold(cs.account, cc.StorageAccount) {
		return nil, fmt.Errorf("azstore: the connection string is of storage account %q, the store's is %q", cs.account, cc.StorageAccount)
	}
	if cc.Endpoint != "" && !strings.EqualFold(strings.TrimSuffix(cc.Endpoint, "/"), strings.TrimSuffix(cs.endpoint, "/")) {
		return nil, fmt.Errorf("azstore: the connection string's blob endpoint is not the store's endpoint %q", cc.Endpoint)
	}
	u, err := containerURL(cs.endpoint, cc)
	if err != nil {
		return nil, err
	}
	if cs.sas != "" {
		return container.NewClientWithNoCredential(u+"?"+strings.TrimPrefix(cs.sas, "?"), opts)
	}
	cred, err := container.NewSharedKeyCredential(cs.account, cs.key)
	if err != nil {
		return nil, fmt.Errorf("azstore: connection string: account key: %w", err)
	}
	return container.NewClientWithSharedKeyCredential(u, cred, opts)
}

// containerURL checks ep by pkg/endpoint's rules and returns the
// container's URL under it.
func containerURL(ep string, cc ClientConfig) (string, error) {
	if err := endpoint.Check(ep, cc.AllowInsecureEndpoint); err != nil {
		return "", fmt.Errorf("azstore: %w", err)
	}
	return strings.TrimSuffix(ep, "/") + "/" + url.PathEscape(cc.Container), nil
}

// connString is what Mill reads of an Azure Storage connection string.
type connString struct {
	account, key, sas, endpoint string
}

// parseConnectionString reads the account, its key or a SAS token, and
// the blob endpoint (BlobEndpoint, or DefaultEndpointsProtocol, the
// account and EndpointSuffix). Errors never quote the string: it holds a
// secret.
func parseConnectionString(s string) (connString, error) {
	var cs connString
	kv := map[string]string{}
	for part := range strings.SplitSeq(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return cs, errors.New("azstore: the connection string is not a list of key=value pairs")
		}
		kv[strings.ToLower(k)] = v
	}
	cs.account, cs.key, cs.sas, cs.endpoint = kv["accountname"], kv["accountkey"], kv["sharedaccesssignature"], kv["blobendpoint"]
	if cs.endpoint == "" && cs.account != "" {
		proto, suffix := kv["defaultendpointsprotocol"], kv["endpointsuffix"]
		if proto == "" {
			proto = "https"
		}
		if suffix == "" {
			suffix = "core.windows.net"
		}
		cs.endpoint = proto + "://" + cs.account + ".blob." + suffix
	}
	if cs.account == "" && cs.endpoint != "" {
		// A SAS connection string may name only the endpoint:
		// https://<account>.blob.core.windows.net.
		if u, err := url.Parse(cs.endpoint); err == nil {
			cs.account, _, _ = strings.Cut(u.Hostname(), ".")
		}
	}
	switch {
	case cs.account == "" || cs.endpoint == "":
		return cs, errors.New("azstore: the connection string names no storage account or blob endpoint")
	case (cs.key == "") == (cs.sas == ""):
		return cs, errors.New("azstore: the connection string needs an AccountKey or a SharedAccessSignature (one of them)")
	}
	return cs, nil
}
