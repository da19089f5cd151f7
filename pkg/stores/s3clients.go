package stores

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/pkg/storage"
)

// ShareS3Clients wraps the S3 constructor of an OpenerConfig so that
// stores reached the same way (Store.Access: same region, endpoint and
// credentials) share one S3 client. s3store copies server-side only between
// stores on one client, and Opener builds a client per store, so without
// this every copy between two S3 stores (the dup processor's, the bit-error
// repairs') would stream through the worker.
func ShareS3Clients(open OpenS3Func) OpenS3Func {
	var mu sync.Mutex
	clients := map[Access]*s3.Client{}
	return func(ctx context.Context, c *s3.Client, s Store) (storage.Provider, error) {
		key := s.Access()
		mu.Lock()
		if shared, ok := clients[key]; ok {
			c = shared
		} else {
			clients[key] = c
		}
		mu.Unlock()
		return open(ctx, c, s)
	}
}
