//go:build unix

package fsstore

import (
	"io/fs"
	"syscall"
)

// fileNumber is fi's inode number; 0 when the system does not say.
func fileNumber(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
