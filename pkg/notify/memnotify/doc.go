// Package memnotify is a notify.Notifier that keeps the events in memory,
// for tests and the dev mode (which prints what it would send).
package memnotify
