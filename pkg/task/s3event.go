package task

import (
	"encoding/json"
	"strings"
)

// S3 event notifications. Content written straight to a store's bucket is
// audited too: the bucket sends S3 event notifications to the audit queue,
// and Decode recognises their JSON bodies, so Workman hands them to the
// audit processor like any other task:
//
//   - a body {"Records":[{"eventSource":"aws:s3",…},…]} decodes to an AUDIT
//     task whose only property KeyS3Event holds the body unchanged (the audit
//     processor parses it with pkg/s3event);
//   - the {"Service":"Amazon S3","Event":"s3:TestEvent",…} body S3 sends
//     when notifications are configured decodes to a NOOP task with
//     KeyS3TestEvent set to the bucket name, so it is simply acknowledged;
//   - either of those wrapped by SNS — a bucket notifying an SNS topic the
//     audit queue subscribes to without raw message delivery, the usual way
//     to fan one bucket's events out to several consumers — is unwrapped:
//     {"Type":"Notification","TopicArn":…,"Message":"<the S3 body>",…}
//     decodes as its Message (KeyS3Event holds the S3 body, not the SNS
//     envelope).
//
// Such tasks encode like any other (as Mill's envelope), so a retried S3
// event keeps its body and its attempts.
const (
	// KeyS3Event carries the raw S3 event notification of an AUDIT task.
	KeyS3Event = "s3-event"
	// KeyS3TestEvent is set (to the bucket) on the NOOP task decoded from
	// an s3:TestEvent body.
	KeyS3TestEvent = "s3-test-event"
)

// s3Notification is just enough of an S3 event notification to recognise
// one.
type s3Notification struct {
	Records []struct {
		EventSource string `json:"eventSource"`
	} `json:"Records"`
	Service string `json:"Service"`
	Event   string `json:"Event"`
	Bucket  string `json:"Bucket"`
	// The SNS envelope.
	Type     string `json:"Type"`
	TopicArn string `json:"TopicArn"`
	Message  string `json:"Message"`
}

// decodeS3Notification returns the task for an S3 event notification body,
// or false when b is not one (then b is decoded as Mill's envelope).
func decodeS3Notification(b []byte) (*Task, bool) {
	var n s3Notification
	if json.Unmarshal(b, &n) != nil {
		return nil, false
	}
	if n.Type == "Notification" && strings.HasPrefix(n.TopicArn, "arn:") && n.Message != "" && len(n.Records) == 0 {
		// Unwrap once: an SNS envelope around an SNS envelope is not S3's.
		inner := []byte(n.Message)
		var again s3Notification
		if json.Unmarshal(inner, &again) != nil || again.Type == "Notification" {
			return nil, false
		}
		return decodeS3Notification(inner)
	}
	if n.Event == "s3:TestEvent" && n.Service == "Amazon S3" {
		return &Task{Type: TypeNoop, Props: map[string]string{KeyS3TestEvent: n.Bucket}}, true
	}
	if len(n.Records) == 0 {
		return nil, false
	}
	for _, r := range n.Records {
		if r.EventSource != "aws:s3" {
			return nil, false
		}
	}
	return &Task{Type: TypeAudit, Props: map[string]string{KeyS3Event: string(b)}}, true
}
