// Package layers holds the import-direction check (docs/ARCHITECTURE.md,
// Repository layout): every Mill package belongs to a layer by its folder,
// and an import may only run down (or sideways where the table allows).
// The test lists every arrow that runs up; `make lint` and `make test` run
// it.
package layers
