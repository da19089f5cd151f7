// Package task is Mill's task model: a Task (type, attempts, string properties),
// typed views of each task type with validation, and the codecs that put tasks on
// queues — Mill's versioned JSON envelope and the Java .properties text that
// DuraCloud components write.
package task
