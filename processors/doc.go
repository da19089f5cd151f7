// Package processors is Workman's processor API: the Handler interface every
// task processor implements, the outcomes a handler reports through its error
// (nil, Permanent, RetryAfter, Release, Unavailable — an outage of a
// dependency, which IsUnavailable also reads from the pgx and AWS SDK
// errors where they are typed (unavailable.go); throttling, which
// IsThrottled reads from the AWS SDK's errors and pkg/aimd's refused turns
// (throttled.go) — any other error; a nil
// after Continue: a continuation of the task was queued, so it is not done
// for the record of runs), a Mux that routes tasks to
// processors by task type, and the middleware that adds cross-cutting
// behaviour around any handler: Logging, Metrics, Timeout and Recover.
//
// Mux is itself a Handler, so middleware wraps it as it wraps any
// processor. A typical chain, outermost first (internal/wiring.Chain builds
// the one every way of running the mill uses):
//
//	mux := processors.NewMux()
//	mux.Register(task.TypeNoop, noop.New(noop.Config{}))
//	h := processors.Chain(mux,
//		processors.Logging(logger),
//		processors.Metrics(observer),
//		processors.Recover(),
//	)
//
// Timeouts are usually applied by Workman (it owns the per-type table), but
// the Timeout middleware is available to any other caller.
//
// Processors themselves live in sub-packages: audit, dup, bit, biterror,
// bitreport and noop; internal/wiring builds and registers them
// (docs/ARCHITECTURE.md, Processors).
package processors
