package setup

import (
	"encoding/json"
	"testing"
)

// FuzzParseRedrivePolicy: the RedrivePolicy attribute read back from SQS
// (or an emulator) never panics the parser, and a policy Mill writes reads
// back unchanged.
func FuzzParseRedrivePolicy(f *testing.F) {
	f.Add(`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:mill-dead-letter","maxReceiveCount":10}`, "arn", 10)
	f.Add(`{"deadLetterTargetArn":"a","maxReceiveCount":"10"}`, "", 0)
	f.Add(`{"maxReceiveCount":"x"}`, "\x00", -1)
	f.Add(`[]`, "a\"b", 1<<40)
	f.Fuzz(func(t *testing.T, s, arn string, n int) {
		_, _ = ParseRedrivePolicy(s)
		b, err := json.Marshal(RedrivePolicy{DeadLetterTargetArn: arn, MaxReceiveCount: n})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseRedrivePolicy(string(b))
		if err != nil || got.MaxReceiveCount != n {
			t.Fatalf("ParseRedrivePolicy(%s) = %+v, %v", b, got, err)
		}
	})
}
