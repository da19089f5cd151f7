// Package docs keeps the README's configuration reference true: it builds
// every binary, reads each command's --help (every flag is also a MILL_*
// environment variable, printed by internal/envflag) and checks that the
// reference block in README.md is exactly what the binaries say.
// `make docs` (go test ./test/docs -run TestConfigReference -update)
// regenerates the block.
package docs
