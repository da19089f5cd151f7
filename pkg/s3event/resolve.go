package s3event

import (
	"fmt"
	"strings"

	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/s3store"
	"github.com/millfleet/mill/pkg/stores"
)

// Location is the item an object key holds.
type Location struct {
	Account, StoreID, SpaceID, ContentID string
}

// Resolver maps a bucket and (decoded) key to the item it holds. Errors
// wrap ErrUnknownBucket or ErrIgnored.
type Resolver interface {
	Resolve(bucket, key string) (Location, error)
}

// RegistryResolver resolves over the s3 stores of a registry. An object
// of a space bucket of a DuraCloud-layout store (<account prefix>.<space>)
// is the item of that space whose content ID is the key; objects of such a
// store's own bucket are Mill's bookkeeping, never content (ErrIgnored). Stores of
// one bucket never share or nest prefixes (stores.Parse refuses it), so at
// most one prefix matches; were there more, the longest would win.
type RegistryResolver struct {
	Registry *stores.Registry
}

var _ Resolver = RegistryResolver{}

// Resolve implements Resolver.
func (r RegistryResolver) Resolve(bucket, key string) (Location, error) {
	var best *stores.Store
	var account string
	inBucket := false
	if r.Registry != nil {
		for _, a := range r.Registry.Accounts {
			for i := range a.Stores {
				s := &a.Stores[i]
				if s.Kind != storage.KindS3 {
					continue
				}
				if s.Layout == s3store.LayoutDuraCloud {
					if space, ok := strings.CutPrefix(bucket, strings.ToLower(s.AccountPrefix)+"."); ok {
						return duraLocation(a.ID, s.ID, space, key)
					}
					if s.Bucket == bucket {
						inBucket = true // Mill's bookkeeping: never content
					}
					continue
				}
				if s.Bucket != bucket {
					continue
				}
				inBucket = true
				if strings.HasPrefix(key, s.Prefix) && (best == nil || len(s.Prefix) > len(best.Prefix)) {
					best, account = s, a.ID
				}
			}
		}
	}
	if !inBucket {
		return Location{}, fmt.Errorf("%w %q", ErrUnknownBucket, bucket)
	}
	if best == nil {
		return Location{}, fmt.Errorf("%w: s3://%s/%s is outside every store's prefix", ErrIgnored, bucket, key)
	}
	return Split(account, best.ID, best.Prefix, key)
}

// duraLocation maps an object of a DuraCloud-layout store's space bucket
// to its item: the bucket names the space, the key is the content ID.
func duraLocation(account, storeID, space, key string) (Location, error) {
	if err := storage.ValidateSpaceID(space); err != nil {
		return Location{}, fmt.Errorf("%w: bucket of space %q: %v", ErrIgnored, space, err)
	}
	if err := s3store.ValidateDuraCloudSpaceID(space); err != nil {
		return Location{}, fmt.Errorf("%w: bucket of space %q: %v", ErrIgnored, space, err)
	}
	if err := storage.ValidateContentID(key); err != nil {
		return Location{}, fmt.Errorf("%w: %q: %v", ErrIgnored, key, err)
	}
	return Location{Account: account, StoreID: storeID, SpaceID: space, ContentID: key}, nil
}

// Split maps key of a store with prefix to its item: key = prefix + space +
// "/" + content. A space marker (prefix + space), a key whose space is not
// a valid space ID (Mill's reserved ".…" keys among them) or whose content
// ID is invalid is ErrIgnored.
func Split(account, storeID, prefix, key string) (Location, error) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return Location{}, fmt.Errorf("%w: %q is outside the store's prefix %q", ErrIgnored, key, prefix)
	}
	space, content, ok := strings.Cut(rest, "/")
	if !ok {
		return Location{}, fmt.Errorf("%w: %q is a space marker", ErrIgnored, key)
	}
	if err := storage.ValidateSpaceID(space); err != nil {
		return Location{}, fmt.Errorf("%w: %q: %v", ErrIgnored, key, err)
	}
	if err := storage.ValidateContentID(content); err != nil {
		return Location{}, fmt.Errorf("%w: %q: %v", ErrIgnored, key, err)
	}
	return Location{Account: account, StoreID: storeID, SpaceID: space, ContentID: content}, nil
}
