package queue

// Keys of Mill's seven queues (docs/ARCHITECTURE.md, Queues). A queue's name
// is a prefix (default DefaultPrefix) followed by its key.
const (
	KeyAudit      = "audit"
	KeyDupHigh    = "dup-high"
	KeyBitReport  = "bit-report"
	KeyBitError   = "bit-error"
	KeyDupLow     = "dup-low"
	KeyBit        = "bit"
	KeyDeadLetter = "dead-letter"
)

// DefaultPrefix is prepended to every queue key to form its name.
const DefaultPrefix = "mill-"

// DefaultPriority is Workman's default queue order, highest priority first.
var DefaultPriority = []string{KeyAudit, KeyDupHigh, KeyBitReport, KeyBitError, KeyDupLow, KeyBit}

// AllKeys lists the seven queues: the work queues in priority order, then
// the dead-letter queue.
var AllKeys = append(append([]string{}, DefaultPriority...), KeyDeadLetter)

// Name returns the queue name for key under prefix.
func Name(prefix, key string) string { return prefix + key }

// Resolve returns the name of a queue given by its key (named under
// prefix) or by its full name (returned as it is).
func Resolve(prefix, keyOrName string) string {
	for _, k := range AllKeys {
		if keyOrName == k {
			return Name(prefix, k)
		}
	}
	return keyOrName
}
