package benchtable

import (
	"fmt"
	"regexp"
)

// The rows of test/scale BenchmarkSpaceScale: per store kind and
// producer, the time per item at the largest size run (1,000,000 when
// MILL_BENCH_ITEMS or MILL_BENCH_S3_ITEMS asks for it) against that at
// 10,000, the real binaries' CPU time per item, and their peak RSS at the
// largest size against that at 10,000.
func init() {
	producers := []struct{ unit, name string }{{"dup", "dupproducer"}, {"bit", "bitproducer"}}
	for _, store := range []string{"fs", "s3"} {
		name := regexp.MustCompile(`^BenchmarkSpaceScale/` + store + `$`)
		expect := "test/scale BenchmarkSpaceScale/" + store
		for _, p := range producers {
			largest := func(suffix string) Pick {
				return units(`^`+p.unit+`-1000000-`+suffix+`$`, `^`+p.unit+`-100000-`+suffix+`$`, `^`+p.unit+`-10000-`+suffix+`$`)
			}
			Rows = append(Rows,
				Row{Measure: fmt.Sprintf("Space of N items, %s: %s time per item, largest N vs 10,000 (ns/item; acceptance: ratio ≤ 1.2)", store, p.name),
					Pkg: "test/scale", Name: name, Value: largest(`ns/item`), Baseline: units(`^` + p.unit + `-10000-ns/item$`),
					Ratio: units(`^` + p.unit + `-largest/smallest$`), Expect: expect})
			Rows = append(Rows,
				Row{Measure: fmt.Sprintf("Space of N items, %s: %s process CPU time per item, largest N vs 10,000 (ns/item)", store, p.name),
					Pkg: "test/scale", Name: name, Value: largest(`cpu-ns/item`), Baseline: units(`^` + p.unit + `-10000-cpu-ns/item$`),
					Ratio: units(`^` + p.unit + `-cpu-largest/smallest$`), Expect: expect},
				Row{Measure: fmt.Sprintf("Peak RSS MiB: %s process over a space of the largest N, %s, vs over 10,000 (acceptance: under 64)", p.name, store),
					Pkg: "test/scale", Name: name, Value: largest(`peak-rss-MiB`), Baseline: units(`^` + p.unit + `-10000-peak-rss-MiB$`), Expect: expect})
		}
	}
	Rows = append(Rows, Row{Measure: "Space of N items, s3: raw ListObjectsV2 time per item, largest N vs 10,000 (the emulator's own growth: the baseline of the rows above)",
		Pkg: "test/scale", Name: regexp.MustCompile(`^BenchmarkSpaceScale/s3$`),
		Value: units(`^sdk-list-1000000-ns/item$`, `^sdk-list-100000-ns/item$`, `^sdk-list-10000-ns/item$`), Baseline: units(`^sdk-list-10000-ns/item$`),
		Ratio: units(`^sdk-list-largest/smallest$`), Expect: "test/scale BenchmarkSpaceScale/s3"})
	for _, store := range []string{"fs", "s3"} {
		Rows = append(Rows, Row{Measure: "Space of N items, " + store + ": acceptance misses (time per item over 1.2x linear, peak RSS over 64 MiB; 0 = met)",
			Pkg: "test/scale", Name: regexp.MustCompile(`^BenchmarkSpaceScale/` + store + `$`), Value: units(`^misses$`), Expect: "test/scale BenchmarkSpaceScale/" + store})
	}
	Rows = append(Rows, Row{Measure: "Seeding LocalStack's S3: empty objects/s, 64 PutObjects in flight",
		Pkg: "test/scale", Name: regexp.MustCompile(`^BenchmarkSpaceScale/s3$`),
		Value: units(`^seed-1000000-objects/s$`, `^seed-100000-objects/s$`, `^seed-.*-objects/s$`), Expect: "test/scale BenchmarkSpaceScale/s3"})
}
