// Package fsconfigstore is the configstore.Store in a local directory (the
// dev mode and tests): the current file is a plain file, every version is
// kept under .history/, and conditions are checked under a lock held by
// this process only.
package fsconfigstore
