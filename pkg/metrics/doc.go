// Package metrics is Mill's observability port: the Recorder that Workman
// (workman.Observer) and the processors.Metrics middleware
// (processors.Observer) report to, Multi, which fans out to several, and
// the bounded task-type labels both recorders use; and LimitRecorder, the
// changes of the per-store request limits (pkg/aimd), which both
// recorders export (mill_store_request_limit{store} and its changes;
// CloudWatch StoreRequestLimit and StoreRequestLimitChanges by Store).
//
// The recorders are sub-packages: prometheusmetrics (Prometheus collectors
// and the /healthz, /readyz and /metrics HTTP endpoints) and
// cloudwatchmetrics (aggregates task results in memory and sends them once
// per interval in a single PutMetricData call, never once per task).
//
// Queue wait: Workman reports each task it ran as a TaskTiming (queue, task
// type, wait from send to start, run time, attempt) to a recorder that is a
// TaskTimer. Prometheus keeps histograms by queue and task type
// (mill_queue_wait_seconds, mill_task_run_seconds, mill_task_attempts:
// p50/p99 by histogram_quantile); CloudWatch gets QueueWait, RunTime and
// Attempts by Queue and TaskType as values and counts in the interval's
// one call (values rounded to two significant digits), so its p50 and p99
// statistics work, which a statistic set would not allow.
package metrics
