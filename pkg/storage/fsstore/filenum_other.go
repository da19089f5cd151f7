//go:build !unix

package fsstore

import "io/fs"

// fileNumber is 0: the system gives no portable file number.
func fileNumber(fs.FileInfo) uint64 { return 0 }
