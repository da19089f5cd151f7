package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/slogtest"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/internal/wiring"
	"github.com/millfleet/mill/pkg/auditlog/memauditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/bitlog/membitlog"
	"github.com/millfleet/mill/pkg/contentindex/memcontentindex"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/queue/memqueue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/audited"
	"github.com/millfleet/mill/pkg/storage/azstore"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/processors"
	"github.com/millfleet/mill/processors/audit"
	"github.com/millfleet/mill/processors/bit"
	"github.com/millfleet/mill/processors/biterror"
	"github.com/millfleet/mill/processors/dup"
)

// chainPolicy duplicates store 1 to 2 and 2 to 3: a chain.
type chainPolicy struct{ p *policy.Policy }

func (c chainPolicy) Accounts(context.Context) ([]string, error) { return []string{account}, nil }

func (c chainPolicy) Policy(_ context.Context, a string) (*policy.Policy, error) {
	if a != account {
		return nil, fmt.Errorf("%w: %s", policy.ErrNotFound, a)
	}
	return c.p, nil
}

// TestChainAcrossClouds: items written to an S3 store travel a chain
// policy S3 → GCS → Azure through the audit and dup processors (each copy
// audited, each audit of a copy making the next hop's DUP), every copy is
// checked byte for byte, and a copy corrupted on Azure behind Mill's back
// is found by the bit check and repaired from a good copy. S3 is the
// emulator (moto), GCS fake-gcs-server in process, Azure Azurite; the
// stores are opened from an accounts.json by wiring.NewOpener, as Workman
// opens them.
func TestChainAcrossClouds(t *testing.T) {
	cfg := testenv.AWS(t)
	ctx := t.Context()
	s3c := cfg.S3()
	bucket := testenv.Prefix(t) + "chain"
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, s3c, bucket)
	gcsEP := testenv.FakeGCS(t)
	gbucket := testenv.GCSBucket(t, testenv.GCSClient(t, gcsEP))
	azEP, container := testenv.AzureContainer(t)
	t.Setenv("MILL_E2E_AZURE", testenv.AzuriteConnectionString(azEP))
	reg, err := stores.Parse("accounts.json", []byte(`{"accounts": [{"id": "`+account+`", "stores": [
  {"id": "1", "primary": true, "kind": "s3", "bucket": "`+bucket+`", "prefix": "mill/", "region": "us-east-1"},
  {"id": "2", "kind": "gcs", "bucket": "`+gbucket+`", "prefix": "mill/", "endpoint": "`+gcsEP+`", "anonymous": true},
  {"id": "3", "kind": "azure", "storageAccount": "`+testenv.AzuriteAccount+`", "container": "`+container+`", "prefix": "mill/", "connectionStringEnv": "MILL_E2E_AZURE"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	opener := wiring.NewOpener(reg, &cfg.AWS, true)
	pol, err := policy.Parse("acme-duplication-policy.json", []byte(`{"spaceDuplicationStorePolicies": {},
  "defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}, {"srcStoreId": "2", "destStoreId": "3"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	policies := chainPolicy{pol}
	log := slogtest.New(t, slog.LevelWarn)
	alog, index, blog := memauditlog.New(), memcontentindex.New(), membitlog.New(nil)
	auditQ := memqueue.New("audit", memqueue.Config{})
	dupQ := memqueue.New("dup", memqueue.Config{})
	bitQ := memqueue.New("bit", memqueue.Config{})
	errQ := memqueue.New("bit-error", memqueue.Config{})
	auditP, err := audit.New(audit.Config{Log: alog, Index: index, DupHigh: dupQ, Policies: policies, Stores: opener, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	dupP, err := dup.New(dup.Config{Opener: opener, Audit: dup.AuditTo(auditQ, task.FormatJSON, nil), Live: dup.FromIndex(index), Policies: policies, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	bitP, err := bit.New(bit.Config{Stores: opener, Index: index, AuditLog: alog, BitLog: blog, AuditQueue: auditQ, BitErrorQueue: errQ, Common: bit.Common{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	errP, err := biterror.New(biterror.Config{Stores: opener, Observer: &bit.Observer{Stores: opener, Index: index, AuditLog: alog},
		BitLog: blog, AuditQueue: auditQ, BitQueue: bitQ, Common: bit.Common{Logger: log}})
	if err != nil {
		t.Fatal(err)
	}
	// pump hands every task on the queues to its processor until all are
	// empty (a Workman of one worker, without SQS).
	pump := func() {
		t.Helper()
		for round := 0; ; round++ {
			if round > 200 {
				t.Fatal("the queues did not empty within 200 rounds")
			}
			busy := false
			for _, qp := range []struct {
				q *memqueue.Queue
				p processors.Handler
			}{{auditQ, auditP}, {dupQ, dupP}, {errQ, errP}, {bitQ, bitP}} {
				msgs, err := qp.q.Receive(ctx, 10, 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range msgs {
					busy = true
					tk, err := task.Decode(m.Body)
					if err != nil {
						t.Fatal(err)
					}
					if err := qp.p.Handle(ctx, tk); err != nil {
						t.Fatalf("%s: %s: %v", qp.q.Name(), tk.Type, err)
					}
					if err := qp.q.Delete(ctx, m); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !busy {
				return
			}
		}
	}

	// Write the items to S3 through the audited provider, as a client of
	// Mill's primary store does.
	src, err := opener.Open(ctx, account, "1")
	if err != nil {
		t.Fatal(err)
	}
	primary, err := audited.New(src, auditQ, audited.Config{Account: account, StoreID: "1", UserID: "depositor"})
	if err != nil {
		t.Fatal(err)
	}
	const space, n = "collection", 6
	items := map[string][]byte{}
	if err := primary.CreateSpace(ctx, space); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		id := fmt.Sprintf("dir/item %d.bin", i)
		items[id] = bytes.Repeat(content(space, i), 1+i*500) // up to ~100 KiB
		if _, err := primary.Put(ctx, space, id, bytes.NewReader(items[id]), storage.PutOptions{Size: int64(len(items[id])), Checksum: md5hex(items[id])}); err != nil {
			t.Fatal(err)
		}
	}
	pump()
	read := func(storeID, id string) []byte {
		t.Helper()
		p, err := opener.Open(ctx, account, storeID)
		if err != nil {
			t.Fatal(err)
		}
		rc, _, err := p.Get(ctx, space, id)
		if err != nil {
			t.Fatalf("store %s: get %s: %v", storeID, id, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for id, want := range items {
		for _, st := range []string{"2", "3"} {
			if got := read(st, id); !bytes.Equal(got, want) {
				t.Fatalf("store %s %s: %d bytes (md5 %s), want %d (md5 %s)", st, id, len(got), md5hex(got), len(want), md5hex(want))
			}
		}
	}

	// Corrupt one copy on Azure behind Mill's back: other bytes under the
	// blob's name, its metadata (Mill's MD5) kept.
	const victim = "dir/item 3.bin"
	azc, err := azstore.NewClient(ctx, azstore.ClientConfig{StorageAccount: testenv.AzuriteAccount, Container: container, ConnectionString: testenv.AzuriteConnectionString(azEP)})
	if err != nil {
		t.Fatal(err)
	}
	bc := azc.NewBlobClient("mill/" + space + "/" + victim)
	props, err := bc.GetProperties(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	sour := bytes.Clone(items[victim])
	sour[len(sour)/2] ^= 0x01
	if _, err := azc.NewBlockBlobClient("mill/"+space+"/"+victim).Upload(ctx, nopCloser{bytes.NewReader(sour)},
		&blockblob.UploadOptions{Metadata: props.Metadata, HTTPHeaders: &blob.HTTPHeaders{BlobContentType: props.ContentType}}); err != nil {
		t.Fatal(err)
	}
	if got := read("3", victim); bytes.Equal(got, items[victim]) {
		t.Fatal("the corruption did not take")
	}

	// The bit check of every Azure copy: the sour one is found, a
	// BIT_ERROR repairs it, and the re-check it schedules finds it sound.
	const runID = "20260101T000000Z"
	for id := range items {
		if err := bitP.Handle(ctx, task.Bit{Account: account, StoreID: "3", SpaceID: space, ContentID: id, RunID: runID}.Task()); err != nil {
			t.Fatalf("bit %s: %v", id, err)
		}
	}
	rows, _, err := blog.Results(ctx, bitlog.Filter{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]bool{}
	for _, r := range rows {
		if r.Result != bitlog.ResultSuccess {
			failed[r.ContentID] = true
		}
	}
	if len(failed) != 1 || !failed[victim] {
		t.Fatalf("bit check of the Azure copies: not sound %v, want only %q", failed, victim)
	}
	if d, _ := errQ.Depth(ctx); d.Visible == 0 {
		t.Fatal("the sour copy made no BIT_ERROR task")
	}
	pump()
	if got := read("3", victim); !bytes.Equal(got, items[victim]) {
		t.Fatalf("after the repair the Azure copy has md5 %s, want %s", md5hex(got), md5hex(items[victim]))
	}
	rows, _, err = blog.Results(ctx, bitlog.Filter{RunID: runID})
	if err != nil {
		t.Fatal(err)
	}
	rechecked := false
	for _, r := range rows {
		rechecked = rechecked || r.ContentID == victim && r.Result == bitlog.ResultSuccess
	}
	if !rechecked {
		t.Errorf("no re-check of the repaired copy found it sound: %+v", rows)
	}
	for id, want := range items {
		for _, st := range []string{"1", "2", "3"} {
			if got := read(st, id); !bytes.Equal(got, want) {
				t.Errorf("after the repair, store %s %s: md5 %s, want %s", st, id, md5hex(got), md5hex(want))
			}
		}
	}
}

type nopCloser struct{ io.ReadSeeker }

func (nopCloser) Close() error { return nil }
