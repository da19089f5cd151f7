package task

import "testing"

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

	for _, notS3 := range []string{
		`{"Records":[{"eventSource":"aws:sqs"}]}`,
		`{"Records":[]}`,
		`{"Event":"s3:TestEvent"}`,
	} {
		if _, err := Decode([]byte(notS3)); err == nil {
			t.Errorf("Decode(%s) succeeded; want a malformed-envelope error", notS3)
		}
	}
}
