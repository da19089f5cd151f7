package benchtable

import "regexp"

// The rows of test/scale BenchmarkBitReportScale: per store kind, the
// time per item of a BIT_REPORT at the largest size run (1,000,000 when
// MILL_BENCH_REPORT_ITEMS or MILL_BENCH_REPORT_S3_ITEMS asks for it)
// against that at 10,000, Workman's peak RSS at the largest size against
// its RSS before the task, and the acceptance misses.
func init() {
	for _, store := range []string{"fs", "s3"} {
		name := regexp.MustCompile(`^BenchmarkBitReportScale/` + store + `$`)
		expect := "test/scale BenchmarkBitReportScale/" + store
		largest := func(suffix string) Pick {
			return units(`^report-1000000-`+suffix+`$`, `^report-100000-`+suffix+`$`, `^report-10000-`+suffix+`$`)
		}
		Rows = append(Rows,
			Row{Measure: "Space of N items, " + store + ": BIT_REPORT time per item (Workman), largest N vs 10,000 (ns/item; acceptance: ratio ≤ 1.2)",
				Pkg: "test/scale", Name: name, Value: largest(`ns/item`), Baseline: units(`^report-10000-ns/item$`),
				Ratio: units(`^report-largest/smallest$`), Expect: expect},
			Row{Measure: "Peak RSS MiB: Workman's BIT_REPORT of a space of the largest N, " + store + ", vs its RSS before the task (acceptance: under 64)",
				Pkg: "test/scale", Name: name, Value: largest(`peak-rss-MiB`), Baseline: largest(`start-rss-MiB`), Expect: expect},
			Row{Measure: "Space of N items, " + store + ": BIT_REPORT acceptance misses (time per item over 1.2x linear, peak RSS over 64 MiB; 0 = met)",
				Pkg: "test/scale", Name: name, Value: units(`^misses$`), Expect: expect})
	}
	Rows = append(Rows, Row{Measure: "Space of N items, s3, BIT_REPORT's space: raw ListObjectsV2 time per item, largest N vs 10,000 (the emulator's own growth: the baseline of the report's)",
		Pkg: "test/scale", Name: regexp.MustCompile(`^BenchmarkBitReportScale/s3$`),
		Value: units(`^sdk-list-1000000-ns/item$`, `^sdk-list-100000-ns/item$`, `^sdk-list-10000-ns/item$`), Baseline: units(`^sdk-list-10000-ns/item$`),
		Ratio: units(`^sdk-list-largest/smallest$`), Expect: "test/scale BenchmarkBitReportScale/s3"})
}
