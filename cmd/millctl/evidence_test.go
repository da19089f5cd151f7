package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/blob/dirblob"
	"github.com/millfleet/mill/pkg/blob/s3blob"
	"github.com/millfleet/mill/pkg/evidence"
)

// runMillctl runs one millctl command line with the process environment.
func runMillctl(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, stdin: strings.NewReader(""), getenv: os.Getenv}
	code = run(ctx, a, args)
	return code, out.String(), errb.String()
}

// evidenceLog appends 600 events in three batches to b and writes the
// log's verifier key to a file; it returns the file and one event's ID.
func evidenceLog(t *testing.T, b blob.Store) (keyFile, eventID string) {
	t.Helper()
	ctx := context.Background()
	skey, vkey, err := evidence.GenerateKey("mill.test/millctl")
	if err != nil {
		t.Fatal(err)
	}
	keyFile = filepath.Join(t.TempDir(), "evidence.vkey")
	if err := os.WriteFile(keyFile, []byte(vkey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := evidence.Open(ctx, b, skey, evidence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for batch := range 3 {
		var es []*evidence.Event
		for i := range 200 {
			n := batch*200 + i
			es = append(es, &evidence.Event{
				V: evidence.FormatVersion, ID: evidence.EventID("millctl-test", string(rune('A'+batch)), strings.Repeat("x", i)), Type: evidence.FixityCheck,
				Time:    evidence.FormatTime(time.Date(2026, 7, 1, 0, 0, n, 0, time.UTC)),
				Object:  evidence.Copy{Account: "acme", Store: "s3-east", Space: "photos", ContentID: "item.tif"},
				Fixity:  &evidence.Fixity{Algorithm: evidence.CRC64NVME, Digest: "0123456789abcdef", Method: evidence.MethodAtRest},
				Outcome: evidence.Success,
				Agent:   evidence.Agent{Kind: evidence.Software, Name: "workman", Instance: "i-1", Version: "test"},
			})
		}
		if _, err := l.Append(ctx, es); err != nil {
			t.Fatal(err)
		}
		if batch == 1 {
			eventID = es[17].ID
		}
	}
	return keyFile, eventID
}

// TestEvidenceCommands: verify passes on a good log and names a rewritten
// tile; proof exports a file that check-proof accepts with the key and
// refuses with another key or once altered.
func TestEvidenceCommands(t *testing.T) {
	dir := t.TempDir()
	key, id := evidenceLog(t, dirblob.New(dir, nil))

	code, out, errOut := runMillctl(t, "evidence", "verify", "--log", dir, "--key", key)
	if code != 0 || !strings.Contains(out, "3 checkpoints, newest of size 600; 600 events checked") || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	proof := filepath.Join(t.TempDir(), "proof.json")
	if code, out, errOut := runMillctl(t, "evidence", "proof", "--log", dir, "--key", key, "--event", id, "--out", proof); code != 0 {
		t.Fatalf("proof: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runMillctl(t, "evidence", "check-proof", proof, "--key", key)
	if code != 0 || !strings.Contains(out, "ok: event "+id) || !strings.Contains(out, "signed at size 600") {
		t.Fatalf("check-proof: exit %d\n%s%s", code, out, errOut)
	}

	_, otherV, _ := evidence.GenerateKey("mill.test/millctl")
	other := filepath.Join(t.TempDir(), "other.vkey")
	os.WriteFile(other, []byte(otherV), 0o644)
	if code, out, errOut := runMillctl(t, "evidence", "check-proof", proof, "--key", other); code != 1 || !strings.Contains(errOut, "signature") {
		t.Fatalf("check-proof with another key: exit %d\n%s%s", code, out, errOut)
	}
	b, _ := os.ReadFile(proof)
	os.WriteFile(proof, bytes.Replace(b, []byte(`\"outcome\":\"success\"`), []byte(`\"outcome\":\"failure\"`), 1), 0o644)
	if code, out, errOut := runMillctl(t, "evidence", "check-proof", proof, "--key", key); code != 1 || !strings.Contains(errOut, "is not leaf") {
		t.Fatalf("check-proof of an altered event: exit %d\n%s%s", code, out, errOut)
	}

	tile := filepath.Join(dir, "tile", "8", "0", "001")
	tb, _ := os.ReadFile(tile)
	tb[7] ^= 0x80
	os.WriteFile(tile, tb, 0o644)
	code, out, errOut = runMillctl(t, "evidence", "verify", "--log", dir, "--key", key)
	if code != 1 || !strings.Contains(out, "MISMATCH tile/8/0/001: rewritten") || !strings.Contains(errOut, "does not verify") {
		t.Fatalf("verify of a rewritten tile: exit %d\n%s%s", code, out, errOut)
	}
}

// TestEvidenceUsage: missing flags and arguments are usage errors, and an
// empty or missing log does not verify.
func TestEvidenceUsage(t *testing.T) {
	for _, args := range [][]string{
		{"evidence", "verify", "--log", t.TempDir()},
		{"evidence", "proof", "--log", t.TempDir(), "--key", "k"},
		{"evidence", "check-proof", "--key", "k"},
		{"evidence", "verify", "--log", "s3://", "--key", "k"},
	} {
		if code, _, errOut := runMillctl(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	_, vkey, _ := evidence.GenerateKey("mill.test/millctl")
	key := filepath.Join(t.TempDir(), "k")
	os.WriteFile(key, []byte(vkey), 0o644)
	for _, log := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing")} {
		if code, out, errOut := runMillctl(t, "evidence", "verify", "--log", log, "--key", key); code != 1 {
			t.Errorf("verify of %s: exit %d, want 1\n%s%s", log, code, out, errOut)
		}
	}
}

// TestEvidenceVerifyS3: verify and proof read a log in an S3 bucket under
// a prefix (the emulator).
func TestEvidenceVerifyS3(t *testing.T) {
	cfg := testenv.AWS(t)
	c := cfg.S3(func(o *s3.Options) { o.UsePathStyle = true })
	bucket := testenv.Prefix(t) + "evidence"
	if _, err := c.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	testenv.CleanupBucket(t, c, bucket)
	key, id := evidenceLog(t, s3blob.New(c, bucket, "evidence/", nil))
	log := "s3://" + bucket + "/evidence"
	if code, out, errOut := runMillctl(t, "evidence", "verify", "--log", log, "--key", key); code != 0 || !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runMillctl(t, "evidence", "proof", "--log", log, "--key", key, "--event", id)
	if code != 0 || !strings.Contains(out, `"format": "mill-evidence-proof/v1"`) {
		t.Fatalf("proof: exit %d\n%s%s", code, out, errOut)
	}
}

// TestEvidenceEvents: events exports the filtered events as canonical
// JSON lines, or as PREMIS XML valid against the PREMIS 3 schema.
func TestEvidenceEvents(t *testing.T) {
	dir := t.TempDir()
	key, _ := evidenceLog(t, dirblob.New(dir, nil))
	code, out, errOut := runMillctl(t, "evidence", "events", "--log", dir, "--key", key, "--since", "2026-07-01T00:01:00Z", "--until", "2026-07-01T00:02:00Z")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || len(lines) != 60 || !strings.Contains(errOut, "60 of 600 events") {
		t.Fatalf("jsonl: exit %d, %d lines\n%s", code, len(lines), errOut)
	}
	for _, l := range lines {
		e, err := evidence.ParseCanonical([]byte(l))
		if err != nil || e.Time < "2026-07-01T00:01:00Z" || e.Time >= "2026-07-01T00:02:00Z" {
			t.Fatalf("line %s: %v", l, err)
		}
	}
	if code, out, _ := runMillctl(t, "evidence", "events", "--log", dir, "--key", key, "--account", "other"); code != 0 || out != "" {
		t.Fatalf("no match, jsonl: exit %d, %q", code, out)
	}
	if code, _, _ := runMillctl(t, "evidence", "events", "--log", dir, "--key", key, "--account", "other", "--format", "premis-xml"); code != 1 {
		t.Fatalf("no match, premis-xml: exit %d, want 1", code)
	}
	if code, _, _ := runMillctl(t, "evidence", "events", "--log", dir, "--key", key, "--format", "csv"); code != 2 {
		t.Fatalf("--format csv: exit %d, want 2", code)
	}
	xmlFile := filepath.Join(t.TempDir(), "events.xml")
	code, _, errOut = runMillctl(t, "evidence", "events", "--log", dir, "--key", key, "--item", "item.tif", "--space", "photos", "--format", "premis-xml", "--out", xmlFile)
	if code != 0 {
		t.Fatalf("premis-xml: exit %d\n%s", code, errOut)
	}
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		testenv.Unavailable(t, "xmllint (Debian package libxml2-utils; localstack/up.sh installs it)", err)
		return
	}
	schema := filepath.Join("..", "..", "pkg", "evidence", "testdata", "premis", "premis-v3-0.xsd")
	if msg, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", schema, xmlFile).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s", err, msg)
	}
	b, _ := os.ReadFile(xmlFile)
	if n := strings.Count(string(b), "<event>"); n != 600 {
		t.Fatalf("%d events in the PREMIS export, want 600", n)
	}
}

// TestEvidenceKeygen: keygen writes a signer key only its owner can read
// that a log opens with, and the verifier key that checks that log; it
// never replaces an existing key file.
func TestEvidenceKeygen(t *testing.T) {
	dir := t.TempDir()
	signer, verifier := filepath.Join(dir, "signer.key"), filepath.Join(dir, "verifier.key")
	code, out, errOut := runMillctl(t, "evidence", "keygen", "--name", "evidence.test/mill", "--signer", signer, "--verifier", verifier)
	if code != 0 || !strings.HasPrefix(out, "evidence.test/mill+") {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, errOut)
	}
	if fi, err := os.Stat(signer); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signer key file: %v, %v", fi.Mode(), err)
	}
	s, err := evidence.LoadSigner(signer, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	skey, _ := os.ReadFile(signer)
	l, err := evidence.Open(context.Background(), dirblob.New(logDir, nil), string(skey), evidence.Options{})
	if err != nil || s.Name() != "evidence.test/mill" {
		t.Fatal(err)
	}
	e := &evidence.Event{V: 1, ID: "e1", Type: evidence.Deletion, Time: "2026-07-01T00:00:00Z", Outcome: evidence.Success, Rule: "test",
		Object: evidence.Copy{Account: "a", Store: "s", Space: "sp", ContentID: "c"}, Agent: evidence.Agent{Kind: evidence.Person, Name: "op"}}
	if _, err := l.Append(context.Background(), []*evidence.Event{e}); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runMillctl(t, "evidence", "verify", "--log", logDir, "--key", verifier); code != 0 {
		t.Fatalf("verify with the new key: exit %d\n%s%s", code, out, errOut)
	}
	before, _ := os.ReadFile(signer)
	if code, _, _ := runMillctl(t, "evidence", "keygen", "--name", "evidence.test/mill", "--signer", signer, "--verifier", filepath.Join(dir, "v2")); code != 1 {
		t.Fatalf("keygen over an existing signer key: exit %d, want 1", code)
	}
	if after, _ := os.ReadFile(signer); string(after) != string(before) {
		t.Fatal("keygen replaced an existing signer key")
	}
	if _, err := os.Stat(filepath.Join(dir, "v2")); err == nil {
		t.Fatal("keygen wrote a verifier key for a key it did not make")
	}
	for _, args := range [][]string{
		{"evidence", "keygen", "--name", "x", "--signer", filepath.Join(dir, "a")},
		{"evidence", "keygen", "--name", "x", "--signer", filepath.Join(dir, "b"), "--verifier", filepath.Join(dir, "b")},
	} {
		if code, _, _ := runMillctl(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := runMillctl(t, "evidence", "keygen", "--name", "bad name+x", "--signer", filepath.Join(dir, "c"), "--verifier", filepath.Join(dir, "d")); code != 1 {
		t.Errorf("a name with a space and a plus: exit %d, want 1", code)
	}
}
