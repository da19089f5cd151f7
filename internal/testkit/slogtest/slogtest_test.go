package slogtest_test

import (
	"log/slog"
	"testing"

	"github.com/millfleet/mill/internal/testkit/slogtest"
)

func TestNewHonoursLevel(t *testing.T) {
	l := slogtest.New(t, slog.LevelWarn)
	if l.Enabled(t.Context(), slog.LevelInfo) || !l.Enabled(t.Context(), slog.LevelWarn) {
		t.Fatal("level not honoured")
	}
	l.Warn("shown in the test's log", "k", "v")
}
