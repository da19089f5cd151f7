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
package metrics
