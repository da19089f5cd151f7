// Package readpath holds the bit check's read-path benchmark
// (BenchmarkBitCheckReadPath, make bench): a 1 GiB item hashed through a
// whole BIT task against md5sum, and the check's peak RSS against
// storage.MemoryBound. It is a package of its own so that its test binary
// holds nothing but the bit check, and its peak is the check's, not what
// another benchmark of the same process left resident: in test/e2e, after
// the 1 GiB copies to GCS and Azure, it read 107 MiB (over the 100 MiB
// goal), run alone there 79 MiB, and here 55 MiB.
package readpath
