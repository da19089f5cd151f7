// Command benchtable reads `go test -bench` output (files named as
// arguments, or stdin) and prints Mill's benchmark summary table; see
// internal/benchtable. scripts/bench.sh runs it after the benchmarks.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/millfleet/mill/internal/benchtable"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	var readers []io.Reader
	for _, a := range args {
		f, err := os.Open(a)
		if err != nil {
			return err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	in := stdin
	if len(readers) > 0 {
		in = io.MultiReader(readers...)
	}
	res, err := benchtable.Parse(in)
	if err != nil {
		return err
	}
	return benchtable.Write(stdout, benchtable.Compute(res, benchtable.Rows))
}
