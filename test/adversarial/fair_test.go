package adversarial

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/millfleet/mill/internal/testkit/testbin"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
	"github.com/millfleet/mill/pkg/workman"
)

// TestHostileMessageGroups: the MessageGroupId of a message only orders
// dispatch between accounts; the real workman runs a task whose group
// names another account, one whose group is every punctuation character,
// one whose account cannot be a group at all, and dead-letters a body
// that is no task whatever its group says.
func TestHostileMessageGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	testbin.Build(t, "workman")
	m := newMill(t, ctx)
	m.writeConfig(nil, nil)
	w := m.startWorkman()
	punct := strings.Repeat(`!"#$%&'()*+,-./:;<=>?@[\]^_{|}~`+"`", 4)[:queue.MaxGroupLen]
	send := func(body, group string) {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(m.urls[queue.KeyBit]), MessageBody: aws.String(body)}
		if group != "" {
			in.MessageGroupId = aws.String(group)
		}
		_, err := m.sqsc.SendMessage(ctx, in)
		must(t, err)
	}
	noop := func(account, marker string) string {
		return encode(t, task.New(task.TypeNoop, map[string]string{task.KeyAccount: account, "id": marker}))
	}
	send(noop("acme", "forged-group"), "someone-else")
	send(noop("acme", "punctuation-group"), punct)
	send(noop("two words ü", "ungroupable-account"), "")
	send("not a task at all", "acme")

	letters := m.deadLetters(1, time.Minute, w)
	if len(letters) != 1 || letters[0].Reason != workman.ReasonUndecodable {
		t.Fatalf("dead letters %+v, want the one undecodable body", letters)
	}
	testbin.WaitFor(t, time.Minute, "the three tasks to run", func() bool {
		b, _ := os.ReadFile(w.record)
		return strings.Contains(string(b), "forged-group") && strings.Contains(string(b), "punctuation-group") &&
			strings.Contains(string(b), "ungroupable-account")
	})
	if !m.drained(30*time.Second, w) {
		t.Errorf("the work queues did not drain")
	}
	w.alive(t)
}
