// Package metrics is Mill's observability: the Recorder that Workman
// (workman.Observer) and the processors.Metrics middleware
// (processors.Observer) report to, Prometheus collectors with the
// /healthz, /readyz and /metrics HTTP endpoints, and Multi, which fans out
// to several recorders.
//
// The CloudWatch publisher is the sub-package cloudwatchmetrics: it
// aggregates task results in memory and sends them once per interval in a
// single PutMetricData call (never once per task).
package metrics
