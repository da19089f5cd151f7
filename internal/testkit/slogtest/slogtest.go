// Package slogtest gives tests a logger that writes to the test's own log
// (testing.TB.Output), so a passing test stays quiet and a failing one
// shows what the code under test logged, next to the failure.
package slogtest

import (
	"log/slog"
	"testing"
)

// New returns a text logger at level writing to t's log.
func New(t testing.TB, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}
