package sqsqueue

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/queue"
)

// Defaults of Config.
const (
	DefaultRetries         = 3
	DefaultRetryBackoff    = 100 * time.Millisecond
	DefaultMaxMessageBytes = 256 << 10
	DefaultMaxBatchBytes   = 256 << 10
	// DefaultCallTimeout: ample for any SQS request (SQS answers in
	// milliseconds; the SDK's own retries of a request run within it),
	// short enough that a stalled endpoint is noticed.
	DefaultCallTimeout = 10 * time.Second
)

// Config tunes a Queue. The zero value is ready to use.
type Config struct {
	// Retries is how many times a batch entry that failed through no fault
	// of the sender is sent again (default DefaultRetries; negative = 0).
	// Whole-call failures are retried by the SDK's retryer, not here.
	Retries int
	// RetryBackoff is the wait before the first entry retry, doubling
	// after each (default DefaultRetryBackoff).
	RetryBackoff time.Duration
	// MaxMessageBytes is the largest message (body plus attribute names,
	// types and values) Send hands to SQS (default DefaultMaxMessageBytes,
	// SQS's classic limit); a larger entry fails with queue.ErrTooLarge
	// without a request.
	MaxMessageBytes int
	// MaxBatchBytes is the largest total payload of one SendMessageBatch
	// (default DefaultMaxBatchBytes).
	MaxBatchBytes int
	// Clock times the entry retry backoff (default clock.Real{}).
	Clock clock.Clock
	// Logger gets a Warn line for each send the SDK had to make more
	// than once, which may have queued its messages twice (resend.go;
	// default slog.Default()).
	Logger *slog.Logger
	// CallTimeout bounds each SQS request beyond what it asks SQS to
	// wait: a receive gets its long-poll wait plus CallTimeout, any other
	// request CallTimeout (default DefaultCallTimeout, 10 s). A request
	// still unanswered then fails with a *TimeoutError (timeout.go).
	CallTimeout time.Duration
}

// WithDefaults returns c with zero fields set to their defaults (a zero
// MaxBatchBytes is at least MaxMessageBytes, so one message always fits a
// batch).
func (c Config) WithDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Retries = max(c.Retries, 0) // negative: no retries
	if c.MaxBatchBytes == 0 {
		c.MaxBatchBytes = max(DefaultMaxBatchBytes, c.MaxMessageBytes)
	}
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

// defaultConfig holds the values WithDefaults gives a Config's zero fields.
var defaultConfig = Config{
	Retries:         DefaultRetries,
	RetryBackoff:    DefaultRetryBackoff,
	MaxMessageBytes: DefaultMaxMessageBytes,
	CallTimeout:     DefaultCallTimeout,
}

// MaxPayloadBytes is the most SQS takes in one message and in one batch
// (1 MiB).
const MaxPayloadBytes = 1 << 20

// validate reports every field of c (defaults applied) out of range.
func (c Config) validate() error {
	p := validate.Struct("sqsqueue: Config", c)
	p.Check(c.RetryBackoff >= 0, "RetryBackoff", c.RetryBackoff, "not be negative")
	p.Check(c.CallTimeout > 0, "CallTimeout", c.CallTimeout, "be positive")
	p.Check(c.MaxMessageBytes >= 0 && c.MaxMessageBytes <= MaxPayloadBytes, "MaxMessageBytes", c.MaxMessageBytes, "be within 1..%d", MaxPayloadBytes)
	p.Check(c.MaxBatchBytes >= c.MaxMessageBytes && c.MaxBatchBytes <= MaxPayloadBytes, "MaxBatchBytes", c.MaxBatchBytes,
		"be within MaxMessageBytes (%d)..%d", c.MaxMessageBytes, MaxPayloadBytes)
	if err := p.Err(); err != nil {
		return fmt.Errorf("%w: %w", queue.ErrInvalid, err)
	}
	return nil
}
