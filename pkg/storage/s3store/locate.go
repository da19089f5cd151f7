package s3store

import "strings"

// ObjectPrefix returns the bucket of a space's items and their key prefix:
// an item's object key is prefix + content ID (the store's bucket and
// prefix + space + "/", or the space's own bucket and "" in DuraCloud's
// layout). At-rest checksum jobs (pkg/atrest) name objects so, and their
// completion reports are read back so.
func (s *Store) ObjectPrefix(space string) (bucket, prefix string, err error) {
	key, err := s.contentKey(space, "x")
	if err != nil {
		return "", "", err
	}
	return key.bucket, strings.TrimSuffix(key.key, "x"), nil
}
