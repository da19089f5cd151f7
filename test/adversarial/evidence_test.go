package adversarial

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/evidence"
)

// TestEvidenceLogAttacks builds an evidence log in an emulator bucket
// (four batches: checkpoints at 256, 600, 601 and 901 events) and runs the
// real `millctl evidence verify` after each attack on the bucket: a hash
// tile rewritten, an event's bytes changed, a leaf deleted, the latest
// checkpoint replaced by an older one, a checkpoint forged with another
// key, the log rolled back whole (caught with --trusted). Each is a
// MISMATCH naming the object, exit 1; the log restored verifies again;
// verify never writes to the bucket. Hostile proof files are refused
// without a crash.
func TestEvidenceLogAttacks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	millctl := testbin.Build(t, "millctl")["millctl"]
	cfg := testenv.AWS(t)
	s3c := cfg.S3()
	bucket := testenv.Prefix(t) + "evidence"
	_, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	must(t, err)
	testenv.CleanupBucket(t, s3c, bucket)
	store := s3blob.New(s3c, bucket, "evidence/", nil)

	skey, vkey, err := evidence.GenerateKey("mill.adversarial/evidence")
	must(t, err)
	keyFile := filepath.Join(t.TempDir(), "evidence.vkey")
	must(t, os.WriteFile(keyFile, []byte(vkey+"\n"), 0o644))
	l, err := evidence.Open(ctx, store, skey, evidence.Options{})
	must(t, err)
	n := 0
	var ids []string
	for _, size := range []int{256, 344, 1, 300} {
		var es []*evidence.Event
		for range size {
			e := &evidence.Event{
				V: evidence.FormatVersion, ID: evidence.EventID("adversarial", fmt.Sprint(n)), Type: evidence.FixityCheck,
				Time:    evidence.FormatTime(time.Date(2026, 7, 1, 0, 0, 0, n, time.UTC)),
				Object:  evidence.Copy{Account: "acme", Store: "1", Space: space, ContentID: fmt.Sprintf("item-%d", n)},
				Fixity:  &evidence.Fixity{Algorithm: evidence.MD5, Digest: fmt.Sprintf("%032x", n), Expected: fmt.Sprintf("%032x", n), Method: evidence.MethodRead},
				Outcome: evidence.Success,
				Agent:   evidence.Agent{Kind: evidence.Software, Name: "workman", Instance: "adversarial", Version: "test"},
			}
			es, ids, n = append(es, e), append(ids, e.ID), n+1
		}
		_, err := l.Append(ctx, es)
		must(t, err)
	}
	logURL := "s3://" + bucket + "/evidence"
	env := testbin.Env()
	verify := func(extra ...string) (int, string) {
		t.Helper()
		code, stdout, stderr := run(t, millctl, env, append([]string{"evidence", "verify", "--log", logURL, "--key", keyFile}, extra...)...)
		if strings.Contains(stderr, "panic") {
			t.Fatalf("verify panicked:\n%s", stderr)
		}
		return code, stdout
	}
	get := func(key string) []byte {
		t.Helper()
		b, err := store.Get(ctx, key)
		must(t, err)
		return b
	}
	put := func(key string, b []byte) { t.Helper(); must(t, store.Put(ctx, key, b)) }
	history := func(size int) string { return fmt.Sprintf("checkpoints/%020d", size) }

	before := bucketETags(t, ctx, s3c, bucket)
	if code, out := verify(); code != 0 || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("verify of the intact log: exit %d\n%s", code, out)
	}
	if after := bucketETags(t, ctx, s3c, bucket); !maps.Equal(before, after) {
		t.Fatal("verify changed the bucket")
	}

	otherKey, _, err := evidence.GenerateKey("mill.adversarial/evidence")
	must(t, err)
	forger, err := evidence.Open(ctx, dirblob.New(t.TempDir(), nil), otherKey, evidence.Options{})
	must(t, err)
	forged, err := forger.Append(ctx, []*evidence.Event{{V: 1, ID: "forged", Type: evidence.Deletion, Time: "2026-07-01T00:00:00Z",
		Object: evidence.Copy{Account: "acme", Store: "1", Space: space, ContentID: "item-0"}, Outcome: evidence.Success, Rule: "none",
		Agent: evidence.Agent{Kind: evidence.Person, Name: "mallory"}}})
	must(t, err)

	for _, a := range []struct {
		name, key, want string
		tamper          func(b []byte) []byte
	}{
		{"hash tile rewritten", "tile/8/0/001", "MISMATCH tile/8/0/001: rewritten", func(b []byte) []byte { b[100] ^= 1; return b }},
		{"event changed", "tile/8/data/001", "MISMATCH " + history(600) + ": its root hash is not the leaves'", func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"outcome":"success"`), []byte(`"outcome":"failure"`), 1)
		}},
		{"leaf deleted", "tile/8/data/002", "MISMATCH tile/8/data/002: ", func(b []byte) []byte {
			lines := bytes.SplitAfter(b, []byte("\n"))
			return bytes.Join(append(lines[:5:5], lines[6:]...), nil)
		}},
		{"checkpoint replaced by an older one", "checkpoint", "MISMATCH checkpoint: size 600 is older", func([]byte) []byte { return get(history(600)) }},
		{"checkpoint forged with another key", history(901), "MISMATCH " + history(901) + ": signature", func([]byte) []byte { return forged.Checkpoint.Signed }},
	} {
		t.Run(a.name, func(t *testing.T) {
			orig := get(a.key)
			put(a.key, a.tamper(bytes.Clone(orig)))
			code, out := verify()
			if code != 1 || !strings.Contains(out, a.want) {
				t.Errorf("verify after %s: exit %d, want 1 and %q:\n%s", a.name, code, a.want, out)
			}
			put(a.key, orig)
			if code, out := verify(); code != 0 {
				t.Fatalf("verify of the restored log: exit %d\n%s", code, out)
			}
		})
	}

	t.Run("rolled back whole", func(t *testing.T) {
		trusted := filepath.Join(t.TempDir(), "trusted")
		must(t, os.WriteFile(trusted, get("checkpoint"), 0o644))
		// Every trace of the last batch's checkpoint is gone (an attacker
		// with delete rights on a bucket without Object Lock).
		_, err := s3c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("evidence/" + history(901))})
		must(t, err)
		put("checkpoint", get(history(601)))
		if code, out := verify(); code != 0 {
			t.Fatalf("a consistent rolled-back log alone: exit %d\n%s", code, out)
		}
		if code, out := verify("--trusted", trusted); code != 1 || !strings.Contains(out, "MISMATCH trusted checkpoint: size 901") {
			t.Fatalf("verify --trusted after a rollback: exit %d\n%s", code, out)
		}
	})

	t.Run("hostile proofs", func(t *testing.T) {
		dir := t.TempDir()
		good := filepath.Join(dir, "proof.json")
		if code, _, stderr := run(t, millctl, env, "evidence", "proof", "--log", logURL, "--key", keyFile, "--event", ids[300], "--out", good); code != 0 {
			t.Fatalf("proof: exit %d\n%s", code, stderr)
		}
		if code, stdout, stderr := run(t, millctl, env, "evidence", "check-proof", good, "--key", keyFile); code != 0 || !strings.Contains(stdout, "ok: event "+ids[300]) {
			t.Fatalf("check-proof: exit %d\n%s%s", code, stdout, stderr)
		}
		b, err := os.ReadFile(good)
		must(t, err)
		for name, body := range map[string][]byte{
			"garbage":       []byte("\x00\xff{{{"),
			"huge":          bytes.Repeat([]byte(" "), 3<<20),
			"event swapped": bytes.Replace(b, []byte(`item-300`), []byte(`item-301`), 1),
			"deep json":     []byte(strings.Repeat("[", 100000)),
		} {
			f := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			must(t, os.WriteFile(f, body, 0o644))
			code, stdout, stderr := run(t, millctl, env, "evidence", "check-proof", f, "--key", keyFile)
			if code != 1 || strings.Contains(stderr, "panic") || strings.Contains(stdout, "ok") {
				t.Errorf("check-proof of a %s proof: exit %d\n%s%s", name, code, stdout, stderr)
			}
		}
	})
}

// bucketETags maps every object of the bucket to its ETag.
func bucketETags(t *testing.T, ctx context.Context, c *s3.Client, bucket string) map[string]string {
	t.Helper()
	m := map[string]string{}
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		must(t, err)
		for _, o := range page.Contents {
			m[aws.ToString(o.Key)] = aws.ToString(o.ETag)
		}
	}
	return m
}
