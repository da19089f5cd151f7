package devmode

import (
	"context"
	"fmt"
	"github.com/millfleet/mill/pkg/changelog/fschangelog"
	"github.com/millfleet/mill/pkg/configstore/fsconfigstore"
	"net"
	"path/filepath"
	"strings"

	"github.com/millfleet/mill/internal/app/console"
	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/reportstore/fsreportstore"
)

// startConsole serves the Mill Console on the dev mode's own queues,
// configuration, bit log and reports (Config.Console), for the whole run
// and after it, without authentication: the address must be a loopback
// one. It returns the console's URL.
func (e *env) startConsole(ctx context.Context) (string, error) {
	authn := auth.Anonymous{Role: auth.RoleAdmin}
	if err := console.CheckListen(e.cfg.Console, authn); err != nil {
		return "", err
	}
	files, err := fsconfigstore.New(filepath.Join(e.r.Dir, "config"), 0)
	if err != nil {
		return "", err
	}
	changes, err := fschangelog.New(filepath.Join(e.r.Dir, "console-changes"))
	if err != nil {
		return "", err
	}
	queues := queuestats.New(queue.DefaultPrefix, func(_ context.Context, key, _ string) (queue.Queue, error) {
		return e.deps.Queues.Get(key)
	}, nil)
	dlq, err := e.deps.Queues.Get(queue.KeyDeadLetter)
	if err != nil {
		return "", err
	}
	auditQ, err := e.deps.Queues.Get(queue.KeyAudit)
	if err != nil {
		return "", err
	}
	// The dev mode's queues are in memory: a scan needs no long poll.
	dead, err := deadletter.New(deadletter.Config{Queue: dlq, Prefix: queue.DefaultPrefix, Wait: -1, Clock: e.deps.Clock, Logger: e.cfg.Logger,
		Open: func(_ context.Context, name string) (queue.Queue, error) {
			return e.deps.Queues.Get(strings.TrimPrefix(name, queue.DefaultPrefix))
		}})
	if err != nil {
		return "", err
	}
	srv, err := console.New(console.Config{
		Auth: authn, Files: files, Changes: changes, Queues: queues, BitLog: e.deps.BitLog, DeadLetters: dead,
		Index: e.deps.Index, Stats: e.deps.Stats, Audit: e.deps.AuditLog, Runs: e.deps.Runs, Stores: e.deps.Stores, AuditQueue: auditQ,
		Reports: fsreportstore.Store{Dir: e.r.ReportDir}, SampleEvery: consoleSampleEvery, Logger: e.cfg.Logger,
		Where: "dev mode: " + e.r.Dir,
	})
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", e.cfg.Console)
	if err != nil {
		return "", fmt.Errorf("devmode: console: %w", err)
	}
	go func() {
		if err := srv.Serve(ctx, ln); err != nil {
			e.cfg.Logger.Error("devmode: console", "err", err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}
