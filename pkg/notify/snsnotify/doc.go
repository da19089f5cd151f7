// Package snsnotify is the notify.Notifier on an Amazon SNS topic: one
// Publish per event, the subject made valid for SNS (Subject), the body cut
// to MaxBody and the attributes as String message attributes, so
// subscriptions filter by event.
package snsnotify
