package adversarial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	gcs "cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"google.golang.org/api/iterator"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
	"github.com/millfleet/mill/pkg/storage/azstore"
	"github.com/millfleet/mill/pkg/storage/gcsstore"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// TestCloudStoresRefuseForgedTasks: a real Workman serving an account
// whose stores are on GCS (fake-gcs-server, in this process) and Azure
// (Azurite, its connection string in the environment variable
// accounts.json names) dead-letters, as permanent, forged tasks aimed at
// them — hostile content and space IDs, a copy against the policy's
// direction, an unknown store —, lets an ID with "../" name nothing but
// itself, touches nothing in either store, and still copies a legitimate
// item from GCS to Azure.
func TestCloudStoresRefuseForgedTasks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	m := newMill(t, ctx)

	gcsEP := testenv.FakeGCS(t)
	gc, err := gcsstore.NewClient(ctx, gcsstore.ClientConfig{Endpoint: gcsEP, Anonymous: true})
	must(t, err)
	gsdk := testenv.GCSClient(t, gcsEP)
	bucket := testenv.GCSBucket(t, gsdk)
	azEP, cont := testenv.AzureContainer(t)
	conn := testenv.AzuriteConnectionString(azEP)
	azc, err := azstore.NewClient(ctx, azstore.ClientConfig{StorageAccount: testenv.AzuriteAccount, Container: cont, ConnectionString: conn})
	must(t, err)
	m.extraEnv = []string{"MILL_ADV_AZURE=" + conn}
	m.extraAccounts = fmt.Sprintf(`, {"id": "cloudco", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "gcs", "bucket": %q, "prefix": "mill/", "endpoint": %q, "anonymous": true},
  {"id": "2", "kind": "azure", "storageAccount": %q, "container": %q, "prefix": "mill/", "connectionStringEnv": "MILL_ADV_AZURE"}]}`,
		bucket, gcsEP, testenv.AzuriteAccount, cont)
	m.writeConfig([]string{"cloudco"}, map[string]string{
		"cloudco-duplication-policy.json": `{"defaultPolicies": [{"srcStoreId": "1", "destStoreId": "2"}]}`,
	})
	src, err := gcsstore.New(gc, gcsstore.Config{Bucket: bucket, Prefix: "mill/"})
	must(t, err)
	must(t, src.CreateSpace(ctx, space))
	_, err = src.Put(ctx, space, "legit", strings.NewReader("legitimate content"), storage.PutOptions{Size: 18})
	must(t, err)
	dst, err := azstore.New(azc, azstore.Config{Prefix: "mill/"})
	must(t, err)
	must(t, dst.CreateSpace(ctx, space))
	before := cloudSnapshot(t, ctx, gsdk, bucket, azc)

	w := m.startWorkman()
	// "../" in a content ID is an ordinary name in an object store (as on
	// S3): the DUP finds no such item and does nothing; the snapshot below
	// shows it reached no other item.
	m.send(queue.KeyDupHigh, dup(t, "cloudco", "1", "2", space, "../../mill/"+space+"/legit"), nil)
	forged := map[string]string{
		"a NUL in the ID":        dup(t, "cloudco", "1", "2", space, "legit\x00.bin"),
		"an ID past the limit":   dup(t, "cloudco", "1", "2", space, strings.Repeat("x", 1100)),
		"a space that escapes":   dup(t, "cloudco", "1", "2", "../"+space, "legit"),
		"the policy's reverse":   dup(t, "cloudco", "2", "1", space, "legit"),
		"an unknown store":       dup(t, "cloudco", "1", "9", space, "legit"),
		"a bit check of nothing": encode(t, task.Bit{Account: "cloudco", StoreID: "2", SpaceID: "../..", ContentID: "legit", RunID: "r1"}.Task()),
	}
	for _, body := range forged {
		key := queue.KeyDupHigh
		if strings.Contains(body, `"BIT"`) {
			key = queue.KeyBit
		}
		m.send(key, body, nil)
	}
	letters := m.deadLetters(len(forged), time.Minute, w)
	if len(letters) != len(forged) {
		t.Errorf("%d dead letters, want %d (one per forged task)", len(letters), len(forged))
	}
	for _, d := range letters {
		if d.Reason != workman.ReasonPermanent {
			t.Errorf("dead letter %s: %s, want permanent", d.Reason, d.Error)
		}
	}
	w.alive(t)
	if after := cloudSnapshot(t, ctx, gsdk, bucket, azc); !slices.Equal(before, after) {
		t.Errorf("the cloud stores changed:\n before %q\n after  %q", before, after)
	}

	// The legitimate copy goes through.
	m.send(queue.KeyDupHigh, dup(t, "cloudco", "1", "2", space, "legit"), nil)
	if !m.drained(time.Minute, w) {
		t.Fatal("the queues did not drain")
	}
	rc, _, err := dst.Get(ctx, space, "legit")
	if err != nil {
		t.Fatalf("the legitimate copy did not arrive: %v", err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "legitimate content" {
		t.Fatalf("copied item: %q", b)
	}
	w.alive(t)
}

// cloudSnapshot lists every object of the GCS bucket and every blob of
// the Azure container, with its size.
func cloudSnapshot(t *testing.T, ctx context.Context, gc *gcs.Client, bucket string, azc *container.Client) []string {
	t.Helper()
	var out []string
	it := gc.Bucket(bucket).Objects(ctx, nil)
	for {
		a, err := it.Next()
		if errors.Is(err, iterator.Done) {
			break
		}
		must(t, err)
		out = append(out, fmt.Sprintf("gs:%s %d", a.Name, a.Size))
	}
	p := azc.NewListBlobsFlatPager(nil)
	for p.More() {
		page, err := p.NextPage(ctx)
		must(t, err)
		for _, b := range page.Segment.BlobItems {
			out = append(out, fmt.Sprintf("az:%s %d", *b.Name, *b.Properties.ContentLength))
		}
	}
	slices.Sort(out)
	return out
}

// TestCloudEndpointsRefusedAtStart: a registry whose gcs and azure stores
// break the endpoint and credential rules — the metadata address, plain
// http elsewhere, Google's endpoint without credentials for an emulator,
// a connection string pasted where its variable's name belongs — makes
// workman exit 1 naming each, without quoting the secret, having
// received nothing.
func TestCloudEndpointsRefusedAtStart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := newMill(t, ctx)
	dir := t.TempDir()
	const secret = "c2VjcmV0LWtleS1vZi1hY2N0MQ=="
	must(t, os.WriteFile(filepath.Join(dir, "accounts.json"), []byte(`{"accounts": [{"id": "cloudco", "status": "active", "stores": [
  {"id": "1", "primary": true, "kind": "gcs", "bucket": "b1-copy", "endpoint": "http://169.254.169.254/", "allowInsecureEndpoint": true, "anonymous": true},
  {"id": "2", "kind": "gcs", "bucket": "b2-copy", "endpoint": "http://gcs.example.com/", "anonymous": true},
  {"id": "3", "kind": "gcs", "bucket": "b3-copy", "anonymous": true},
  {"id": "4", "kind": "azure", "storageAccount": "acct1", "container": "mill", "managedIdentity": true, "endpoint": "http://blob.example.com/acct1"},
  {"id": "5", "kind": "azure", "storageAccount": "acct1", "container": "other", "connectionStringEnv": "AccountName=acct1;AccountKey=`+secret+`"}]}]}`), 0o644))
	canary := m.send(queue.KeyAudit, `{"v":1,"type":"NOOP","props":{"id":"cloud-endpoint-canary"}}`, nil)
	c := testbin.Run(t, 30*time.Second, testbin.Spec{Path: testbin.Build(t, "workman")["workman"], Args: []string{"--config-dir", dir, "--queues", "audit", "--task-types", "NOOP,AUDIT,DUP",
		"--http-addr", "", "--cloudwatch=false", "--fleet-table", "", "--instance-metadata=false"}, Env: append(m.env(), "MILL_CONFIG_DIR="+dir)})
	out := c.Output()
	if c.ExitCode() != 1 {
		t.Fatalf("workman with a registry breaking the rules: %v\n%s", c.Err(), out)
	}
	for _, s := range []string{"169.254.169.254 is a link-local or metadata address", `endpoint "http://gcs.example.com/" is plain http`,
		"anonymous is for an emulator's endpoint, not Google's", `endpoint "http://blob.example.com/acct1" is plain http`,
		"connectionStringEnv must name an environment variable"} {
		if !strings.Contains(out, s) {
			t.Errorf("workman's refusal does not say %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, secret) {
		t.Errorf("workman's refusal quotes the pasted account key:\n%s", out)
	}
	// Nothing was received: the canary is still there, never received.
	r, err := m.sqsc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.urls[queue.KeyAudit]), MaxNumberOfMessages: 10,
		WaitTimeSeconds: 1, MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
	must(t, err)
	if len(r.Messages) != 1 || aws.ToString(r.Messages[0].MessageId) != canary || r.Messages[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Fatalf("the canary task after the refused start: %d messages", len(r.Messages))
	}
	_, err = m.sqsc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.urls[queue.KeyAudit]), ReceiptHandle: r.Messages[0].ReceiptHandle})
	must(t, err)
}
