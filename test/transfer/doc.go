// Package transfer holds the benchmark that shows the network: Mill's
// streamed copy, bit check and put/get of a big object through a proxy
// shaped like S3 (internal/testkit/faultproxy: a per-connection rate cap and a
// per-request latency), next to Mill with one stream and rclone copying
// the same object between the same buckets through the same proxy, all in
// one run (docs/ARCHITECTURE.md, Transfers). Run with make bench, or:
//
//	go test -run '^$' -bench Shaped -benchtime 1x ./test/transfer
package transfer
