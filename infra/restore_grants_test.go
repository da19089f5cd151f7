package infra

import (
	"slices"
	"strings"
	"testing"
)

// TestBitProducerGrantsRestores: bitproducer asks for restores of the
// archived copies of restore-method stores (storage.Restorer, S3
// RestoreObject) on the store buckets' objects, and only there; no other
// producer may.
func TestBitProducerGrantsRestores(t *testing.T) {
	body := readTemplate(t, "producers.yaml")
	if got := statementActions(t, body, "StoreRestores"); !slices.Equal(got, []string{"s3:RestoreObject"}) {
		t.Errorf("StoreRestores grants %v, want [s3:RestoreObject]", got)
	}
	i := strings.Index(body, "- Sid: StoreRestores\n")
	role := body[:i]
	role = role[strings.LastIndex(role, "\n  # "):]
	if !strings.Contains(role, "\n  BitProducerTaskRole:\n") {
		t.Error("StoreRestores is not a statement of BitProducerTaskRole")
	}
	stmt := body[i:]
	stmt = stmt[:strings.Index(stmt, "\n\n")]
	if !strings.Contains(stmt, `- "${arns}/*"`) || !strings.Contains(stmt, `arns: !Join ["/*,", !Ref StoreBucketArns]`) {
		t.Errorf("StoreRestores is not on the store buckets' objects:\n%s", stmt)
	}
	if n := strings.Count(body, "s3:RestoreObject"); n != 1 {
		t.Errorf("s3:RestoreObject granted %d times in producers.yaml, want once", n)
	}
}
