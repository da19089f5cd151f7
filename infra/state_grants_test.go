package infra

import (
	"slices"
	"testing"
)

// TestProducersGrantTheStateStore keeps producers.yaml's grants on the
// state bucket equal to what looping's S3 state store calls (its S3API):
// a missing one is AccessDenied on AWS only, never on the emulator.
func TestProducersGrantTheStateStore(t *testing.T) {
	body := readTemplate(t, "producers.yaml")
	action := map[string]string{ // S3API method → the IAM action it needs
		"GetObject":     "s3:GetObject",
		"PutObject":     "s3:PutObject",
		"DeleteObjects": "s3:DeleteObject",
		"ListObjectsV2": "s3:ListBucket",
	}
	var want []string
	for _, m := range interfaceMethods(t, "../producers/looping/statestore.go", "S3API") {
		a, ok := action[m]
		if !ok {
			t.Fatalf("looping.S3API calls %s: add its IAM action here and to producers.yaml", m)
		}
		want = append(want, a)
	}
	got := append(statementActions(t, body, "StateReadWrite"), statementActions(t, body, "StateList")...)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("producers.yaml grants %v on the state bucket; looping's S3 state store calls %v", got, want)
	}
}
