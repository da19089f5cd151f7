package main

// The parsers of workman's list-valued flags.

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/task"
)

// parsePairs reads a comma-separated list of KEY=VALUE pairs (form names
// it in errors), calling each for every pair; it reports every malformed
// pair and every problem each finds, prefixed with flag.
func parsePairs(flag, form, s string, each func(k, v string) []error) error {
	var errs []error
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %q is not %s", flag, kv, form))
			continue
		}
		for _, err := range each(strings.TrimSpace(k), strings.TrimSpace(v)) {
			errs = append(errs, fmt.Errorf("%s: %w", flag, err))
		}
	}
	return errors.Join(errs...)
}

func parseTimeouts(s string) (map[task.Type]time.Duration, error) {
	out := map[task.Type]time.Duration{}
	err := parsePairs("timeouts", "TYPE=duration", s, func(k, v string) (errs []error) {
		ty := task.Type(strings.ToUpper(k))
		if !ty.Known() {
			errs = append(errs, fmt.Errorf("unknown task type %q", k))
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
		out[ty] = d
		return errs
	})
	return out, err
}

// parseShares reads --min-share: QUEUE=fraction pairs, each QUEUE a key or
// a full name as in --queues.
func parseShares(prefix, s string) (map[string]float64, error) {
	out := map[string]float64{}
	err := parsePairs("min-share", "QUEUE=fraction", s, func(k, v string) []error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return []error{fmt.Errorf("%s: %w", k, err)}
		}
		out[queue.Resolve(prefix, k)] = f
		return nil
	})
	return out, err
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	err := l.UnmarshalText([]byte(s))
	return l, err
}
