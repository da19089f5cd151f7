//go:build !linux

package fsstore

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// readNames calls add with the name and type of every entry of the open
// directory f, a chunk of entries at a time.
func (s *Store) readNames(f *os.File, rel string, add func(name []byte, typ fs.FileMode) error) error {
	for {
		chunk, err := f.ReadDir(1024)
		for _, e := range chunk {
			if err := add([]byte(e.Name()), e.Type()); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
