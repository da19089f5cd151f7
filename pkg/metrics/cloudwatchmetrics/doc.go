// Package cloudwatchmetrics is the metrics.Recorder that publishes to
// Amazon CloudWatch: it aggregates task results in memory and sends them
// once per interval in a single PutMetricData call (never once per task).
// It names the metrics and dimensions the alarms watch.
package cloudwatchmetrics
