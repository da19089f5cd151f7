// Package docs keeps the documentation true. TestConfigReference builds
// every binary, reads each command's --help (every flag is also a MILL_*
// environment variable, printed by internal/cli/envflag) and checks that the
// generated reference in docs/CONFIGURATION.md is exactly what the binaries
// say; `make docs` (go test ./test/docs -run TestConfigReference -update)
// regenerates it. TestReadmeNames checks that every make target, millctl
// command, binary, flag and repository path README.md names exists.
// TestDocSizes keeps README.md within 400 lines and docs/ARCHITECTURE.md
// within 800. TestShippedExamples loads every example under testdata/.
package docs
