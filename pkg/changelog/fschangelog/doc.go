// Package fschangelog is the changelog.Log in a local directory (the dev
// mode): one file per entry, created exclusively so an entry is never
// replaced.
package fschangelog
