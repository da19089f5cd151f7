//go:build linux

package fsstore

import (
	"encoding/binary"
	"io/fs"
	"os"
	"syscall"
	"unsafe"
)

// readNames calls add with the name and type of every entry of the open
// directory f but "." and "..", reading it with getdents64 into one buffer:
// no allocation per entry, which a directory of a million items would
// otherwise cost (a DirEntry and a string each). A type the directory does
// not record (DT_UNKNOWN) is looked up with lstat(rel/name).
func (s *Store) readNames(f *os.File, rel string, add func(name []byte, typ fs.FileMode) error) error {
	buf := make([]byte, 64<<10)
	fd := int(f.Fd())
	for {
		n, err := syscall.Getdents(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "getdents", Path: rel, Err: err}
		}
		if n <= 0 {
			return nil
		}
		for b := buf[:n]; len(b) > 0; {
			const nameOff = int(unsafe.Offsetof(syscall.Dirent{}.Name))
			if len(b) < nameOff {
				return &os.PathError{Op: "getdents", Path: rel, Err: syscall.EIO}
			}
			reclen := int(binary.NativeEndian.Uint16(b[unsafe.Offsetof(syscall.Dirent{}.Reclen):]))
			if reclen < nameOff || reclen > len(b) {
				return &os.PathError{Op: "getdents", Path: rel, Err: syscall.EIO}
			}
			rec := b[:reclen]
			b = b[reclen:]
			if binary.NativeEndian.Uint64(rec) == 0 {
				continue // a deleted entry
			}
			name := rec[nameOff:]
			for i, c := range name {
				if c == 0 {
					name = name[:i]
					break
				}
			}
			if len(name) == 0 || string(name) == "." || string(name) == ".." {
				continue
			}
			var typ fs.FileMode
			switch rec[unsafe.Offsetof(syscall.Dirent{}.Type)] {
			case syscall.DT_REG:
			case syscall.DT_DIR:
				typ = fs.ModeDir
			case syscall.DT_LNK:
				typ = fs.ModeSymlink
			case syscall.DT_UNKNOWN:
				fi, err := s.root.Lstat(rel + string(os.PathSeparator) + string(name))
				if err != nil {
					continue // removed meanwhile
				}
				typ = fi.Mode().Type()
			default:
				typ = fs.ModeIrregular
			}
			if err := add(name, typ); err != nil {
				return err
			}
		}
	}
}
