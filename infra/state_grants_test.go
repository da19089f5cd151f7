package infra

import (
	"slices"
	"testing"
)

// TestProducersGrantTheStateStore keeps producers.yaml's grants on the
// state bucket equal to what looping's S3 state store calls (the API of
// the s3blob store it keeps its state in): a missing one is AccessDenied
// on AWS only, never on the emulator.
func TestProducersGrantTheStateStore(t *testing.T) {
	body := readTemplate(t, "producers.yaml")
	action := map[string]string{ // API method → the IAM action it needs
		"GetObject":     "s3:GetObject",
		"PutObject":     "s3:PutObject",
		"DeleteObject":  "s3:DeleteObject",
		"DeleteObjects": "s3:DeleteObject",
		"ListObjectsV2": "s3:ListBucket",
	}
	var want []string
	for _, m := range interfaceMethods(t, "../pkg/blob/s3blob/s3blob.go", "API") {
		a, ok := action[m]
		if !ok {
			t.Fatalf("s3blob.API calls %s: add its IAM action here and to producers.yaml", m)
		}
		want = append(want, a)
	}
	got := append(statementActions(t, body, "StateReadWrite"), statementActions(t, body, "StateList")...)
	slices.Sort(want)
	want = slices.Compact(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("producers.yaml grants %v on the state bucket; looping's S3 state store calls %v", got, want)
	}
}
