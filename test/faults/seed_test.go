//go:build faults

package faults

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/milldb"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/task"
)

// seedItems writes n items (item-00000…, bytes body(i)) into space of
// prov, with the content index row and the ADD_CONTENT audit entry of
// each, all agreeing: every bit check of them is a case-1 SUCCESS.
func seedItems(t *testing.T, ctx context.Context, prov storage.Provider, index contentindex.Index, audit auditlog.Log,
	account, storeID, space string, n int, body func(i int) []byte) {
	t.Helper()
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	for i := range n {
		b := body(i)
		sum, _, _ := storage.MD5Hex(bytes.NewReader(b))
		size := int64(len(b))
		if _, err := prov.Put(ctx, space, itemID(i), bytes.NewReader(b), storage.PutOptions{Size: size, Checksum: sum, MimeType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
		if _, err := index.Upsert(ctx, contentindex.Entry{Item: contentindex.Item{Account: account, StoreID: storeID, SpaceID: space, ContentID: itemID(i)},
			Checksum: sum, Size: &size, MimeType: "text/plain", Modified: at}); err != nil {
			t.Fatal(err)
		}
		if _, err := audit.Put(ctx, auditlog.Entry{Account: account, StoreID: storeID, SpaceID: space, ContentID: itemID(i),
			Action: task.ActionAddContent, Time: at, Checksum: sum, Size: &size, MimeType: "text/plain"}); err != nil {
			t.Fatal(err)
		}
	}
}

// migratedPool opens a pool on dbURL, closed when the test ends, with
// Mill's schema migrated up.
func migratedPool(t *testing.T, ctx context.Context, dbURL string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := milldb.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return pool
}
