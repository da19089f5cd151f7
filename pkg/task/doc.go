// Package task is Mill's task model: a Task (type, attempts, string
// properties), typed views of each task type with validation, and the codecs
// that put tasks on queues — Mill's versioned JSON envelope and the Java
// .properties text that DuraCloud components write.
//
// # Typed views
//
// Dup, Bit, BitReport, BitError, Audit and Noop convert both ways with
// XFrom(t *Task) (X, error) and (x X) Task() *Task. Properties a view does not
// know are kept in its Extra map and survive the round trip; an empty
// property counts as absent. XFrom errors wrap ErrInvalid and name the task
// type and the property: `task: DUP: missing property "destStoreId"`.
//
// # Codecs
//
// Encode(t, FormatJSON) writes {"v":1,"type":…,"attempts":…,"props":{…}};
// Encode(t, FormatProperties) writes what java.util.Properties.store writes
// to a Writer: a "#" date line, then key=value lines, with the type under
// "type" and non-zero attempts under "attempts" (keys sorted, so the output
// is deterministic; EncodeOptions.Now fixes the date for tests). Decode
// reads either, telling them apart by the first non-blank byte ('{' is
// JSON), and accepts everything valid .properties text can hold. Every
// Decode error wraps ErrMalformed. Unknown task types decode fine: check
// Type.Known.
//
// Encoded bodies are safe to send on SQS in both formats: characters SQS
// refuses (controls other than tab, LF and CR; U+FFFE; U+FFFF) are escaped.
// Property keys "type" and "attempts" are reserved, and invalid UTF-8 in a
// key, value or type makes Encode fail.
package task
