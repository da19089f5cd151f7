package s3store

// ObjectPrefix returns the bucket of the store and the key prefix of a
// space's items: an item's object key is prefix + content ID. At-rest
// checksum jobs (pkg/atrest) name objects so, and their completion reports
// are read back so.
func (s *Store) ObjectPrefix(space string) (bucket, prefix string, err error) {
	key, err := s.spaceKey(space)
	if err != nil {
		return "", "", err
	}
	return s.cfg.Bucket, key + "/", nil
}
