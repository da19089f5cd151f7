package notify_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/millfleet/mill/pkg/notify"
)

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	e := notify.SpaceCreated("acme", "1", "photos", "ana", time.Date(2026, 5, 1, 2, 3, 4, 0, time.UTC))
	if err := (notify.Log{Logger: slog.New(slog.NewTextHandler(&buf, nil))}).Notify(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`subject="Mill: space photos created in acme/1"`, "event=space-created", "account=acme", "space_id=photos", "store_id=1"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("log line %q lacks %q", buf.String(), want)
		}
	}
	if !strings.Contains(e.Body, "User:    ana") || !strings.Contains(e.Body, "2026-05-01T02:03:04Z") {
		t.Errorf("body %q", e.Body)
	}
}
