package snsnotify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/internal/testkit/testenv"
	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/notify/notifytest"
	"github.com/millfleet/mill/pkg/notify/snsnotify"
)

func TestSubject(t *testing.T) {
	for in, want := range map[string]string{
		"Mill: space photos created":    "Mill: space photos created",
		"two\nlines\ttab":               "two lines tab",
		"  Ünïcødé 文件 ":                 "?n?c?d? ??",
		"":                              "Mill notification",
		strings.Repeat("x", 150):        strings.Repeat("x", snsnotify.MaxSubject-3) + "...",
		"nul\x00 and del\x7f and é end": "nul? and del? and ? end",
	} {
		if got := snsnotify.Subject(in); got != want {
			t.Errorf("Subject(%q) = %q, want %q", in, got, want)
		}
		if got := snsnotify.Subject(in); len(got) > snsnotify.MaxSubject {
			t.Errorf("Subject(%q) is %d characters", in, len(got))
		}
	}
}

func TestNewSNSRefusesOtherARNs(t *testing.T) {
	for _, bad := range []string{"", "mill-notifications", "arn:aws:sqs:us-east-1:123456789012:q",
		"arn:aws:sns:us-east-1:123456789012:topic:subscription-id"} {
		if _, err := snsnotify.New(nil, bad); err == nil {
			t.Errorf("NewSNS(%q) accepted", bad)
		}
	}
}

// TestSNSDelivery publishes to a topic on the emulator and reads what the
// SQS queue subscribed to it received: the subject made valid for SNS, the
// body whole (non-ASCII included), the attributes as String message
// attributes with empty ones left out.
func TestSNSDelivery(t *testing.T) {
	cfg := testenv.AWS(t)
	topic := notifytest.New(t, cfg)
	n, err := snsnotify.New(topic.SNS, topic.ARN)
	if err != nil {
		t.Fatal(err)
	}
	e := notify.SpaceCreated("acme", "1", "fotos-ü", "ana", time.Now())
	e.Attributes[notify.AttrRunID] = ""
	if err := n.Notify(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	long := notify.Event{Type: notify.EventRunFailed, Subject: "line one\nline two " + strings.Repeat("y", 200),
		Body: strings.Repeat("é", snsnotify.MaxBody), Attributes: map[string]string{notify.AttrProducer: "bitproducer"}}
	if err := n.Notify(t.Context(), long); err != nil {
		t.Fatal(err)
	}
	got := topic.Receive(t, 2, 20*time.Second)
	if len(got) != 2 {
		t.Fatalf("received %d deliveries, want 2", len(got))
	}
	var space, failed notifytest.Delivery
	for _, d := range got {
		switch d.Attributes[notify.AttrEvent] {
		case notify.EventSpaceCreated:
			space = d
		case notify.EventRunFailed:
			failed = d
		}
	}
	if space.Subject != "Mill: space fotos-? created in acme/1" || space.Message != e.Body {
		t.Errorf("space created: subject %q message %q", space.Subject, space.Message)
	}
	want := map[string]string{"event": "space-created", "account": "acme", "store_id": "1", "space_id": "fotos-ü"}
	if len(space.Attributes) != len(want) {
		t.Errorf("attributes %v, want %v", space.Attributes, want)
	}
	for k, v := range want {
		if space.Attributes[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, space.Attributes[k], v)
		}
	}
	if len(failed.Subject) > snsnotify.MaxSubject || !strings.HasPrefix(failed.Subject, "line one line two y") {
		t.Errorf("long subject delivered as %q", failed.Subject)
	}
	if len(failed.Message) > snsnotify.MaxBody+100 || !strings.Contains(failed.Message, "cut: the message was longer") {
		t.Errorf("long body delivered with %d bytes", len(failed.Message))
	}
	if failed.Attributes[notify.AttrProducer] != "bitproducer" {
		t.Errorf("producer attribute: %v", failed.Attributes)
	}
}
