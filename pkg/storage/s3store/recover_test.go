package s3store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"github.com/millfleet/mill/pkg/storage"
)

// opCounter counts S3 requests by operation name.
type opCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *opCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

// countingClient returns a client like base that counts its requests.
func countingClient(base *s3.Client) (*s3.Client, *opCounter) {
	c := &opCounter{n: map[string]int{}}
	return s3.New(base.Options(), func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("count", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				c.mu.Lock()
				c.n[middleware.GetOperationName(ctx)]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		})
	}), c
}

// TestRecoveryCost counts the copies recoverability costs: none for a
// first write, none in a versioned bucket, one per delete, overwrite or
// property change in a bucket without versioning; and the versioning
// status is asked once.
func TestRecoveryCost(t *testing.T) {
	for _, versioned := range []bool{false, true} {
		t.Run(map[bool]string{false: "unversioned", true: "versioned"}[versioned], func(t *testing.T) {
			base, bucket := setupBucket(t)
			if versioned {
				enableVersioning(t, base, bucket)
			}
			client, count := countingClient(base)
			s, err := New(client, Config{Bucket: bucket, Prefix: "p/"})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if err := s.CreateSpace(ctx, "sp"); err != nil {
				t.Fatal(err)
			}
			count.take()
			trash := 0
			if !versioned {
				trash = 1
			}
			steps := []struct {
				name   string
				do     func() error
				copies int
			}{
				{"first write", func() error {
					_, err := s.Put(ctx, "sp", "a", strings.NewReader("one"), storage.PutOptions{Size: 3})
					return err
				}, 0},
				{"overwrite", func() error {
					_, err := s.Put(ctx, "sp", "a", strings.NewReader("two"), storage.PutOptions{Size: 3})
					return err
				}, trash},
				{"set properties", func() error { return s.SetProperties(ctx, "sp", "a", map[string]string{"k": "v"}) }, 1 + trash},
				{"delete", func() error { return s.Delete(ctx, "sp", "a") }, trash},
				{"delete of a missing item", func() error { return s.Delete(ctx, "sp", "a") }, 0},
			}
			asked := 0
			for _, st := range steps {
				if err := st.do(); err != nil {
					t.Fatalf("%s: %v", st.name, err)
				}
				n := count.take()
				asked += n["GetBucketVersioning"]
				if n["CopyObject"] != st.copies {
					t.Errorf("%s: %d CopyObject, want %d (requests %v)", st.name, n["CopyObject"], st.copies, n)
				}
				if n["DeleteObject"] > 1 {
					t.Errorf("%s: %d DeleteObject", st.name, n["DeleteObject"])
				}
				t.Logf("%s: %v", st.name, n)
			}
			if asked != 1 {
				t.Errorf("GetBucketVersioning asked %d times, want once", asked)
			}
			vs, err := s.Versions(ctx, "sp", "a")
			if err != nil || len(vs) != 3 {
				t.Fatalf("Versions: %d, %v; want 3", len(vs), err)
			}
			// Version IDs that name nothing of this item are not found.
			other := "version:3sL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo"
			for _, bogus := range []string{"version:", other, "trash:../../x", "trash:" + strings.Repeat("9", 60), vs[0].ID + "x"} {
				if _, err := s.Restore(ctx, "sp", "a", bogus); !errors.Is(err, storage.ErrNotFound) {
					t.Errorf("Restore(%q): %v, want ErrNotFound", bogus, err)
				}
			}
			// The trash copies live apart from the content, and only in a
			// bucket without versioning.
			out, err := base.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("p/" + TrashPrefix)})
			if err != nil {
				t.Fatal(err)
			}
			if want := 3 * trash; len(out.Contents) != want {
				t.Errorf("%d objects under p/%s, want %d", len(out.Contents), TrashPrefix, want)
			}
		})
	}
}
