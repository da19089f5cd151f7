package task

import (
	"encoding/json"
	"testing"
)

func TestDecodeS3Notification(t *testing.T) {
	body := `{"Records":[{"eventVersion":"2.1","eventSource":"aws:s3","eventName":"ObjectCreated:Put","eventTime":"2024-03-05T14:07:09.123Z","s3":{"bucket":{"name":"b"},"object":{"key":"p/sp/a+b.txt","size":3,"eTag":"x"}}}]}`
	tk, err := Decode([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Type != TypeAudit || tk.Get(KeyS3Event) != body || len(tk.Props) != 1 {
		t.Fatalf("Decode = %+v", tk)
	}
	// A retried S3 event travels as Mill's envelope and keeps its body.
	enc, err := Encode(&Task{Type: tk.Type, Attempts: 1, Props: tk.Props}, FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(enc)
	if err != nil || back.Get(KeyS3Event) != body || back.Attempts != 1 {
		t.Fatalf("round trip = %+v, %v", back, err)
	}

	test := `{"Service":"Amazon S3","Event":"s3:TestEvent","Time":"2024-03-05T14:07:09.123Z","Bucket":"b","RequestId":"r","HostId":"h"}`
	tk, err = Decode([]byte(test))
	if err != nil || tk.Type != TypeNoop || tk.Get(KeyS3TestEvent) != "b" {
		t.Fatalf("test event: %+v, %v", tk, err)
	}

	// Through SNS (no raw message delivery): the S3 body is unwrapped.
	sns, err := json.Marshal(map[string]string{"Type": "Notification", "MessageId": "m-1",
		"TopicArn": "arn:aws:sns:us-east-1:123456789012:mill-store-events", "Subject": "Amazon S3 Notification",
		"Message": body, "Timestamp": "2024-03-05T14:07:09.200Z", "SignatureVersion": "1"})
	if err != nil {
		t.Fatal(err)
	}
	tk, err = Decode(sns)
	if err != nil || tk.Type != TypeAudit || tk.Get(KeyS3Event) != body {
		t.Fatalf("SNS-wrapped S3 event: %+v, %v", tk, err)
	}
	snsTest, _ := json.Marshal(map[string]string{"Type": "Notification", "TopicArn": "arn:aws:sns:us-east-1:1:t", "Message": test})
	if tk, err = Decode(snsTest); err != nil || tk.Type != TypeNoop || tk.Get(KeyS3TestEvent) != "b" {
		t.Fatalf("SNS-wrapped test event: %+v, %v", tk, err)
	}
	snsTwice, _ := json.Marshal(map[string]string{"Type": "Notification", "TopicArn": "arn:aws:sns:us-east-1:1:t", "Message": string(sns)})

	for _, notS3 := range []string{
		string(snsTwice),
		`{"Type":"Notification","TopicArn":"arn:aws:sns:us-east-1:1:t","Message":"hello"}`,
		`{"Type":"Notification","TopicArn":"arn:aws:sns:us-east-1:1:t","Message":"{\"Records\":[{\"eventSource\":\"aws:sqs\"}]}"}`,
		`{"Records":[{"eventSource":"aws:sqs"}]}`,
		`{"Records":[]}`,
		`{"Event":"s3:TestEvent"}`,
	} {
		if _, err := Decode([]byte(notS3)); err == nil {
			t.Errorf("Decode(%s) succeeded; want a malformed-envelope error", notS3)
		}
	}
}
