// Package process says which process is which, to an operator: the host,
// the PID and the start time of a lease holder (pkg/lease) and of a
// Workman in the fleet registry (pkg/fleet) are the same three facts,
// with the same JSON names.
package process

import (
	"os"
	"time"
)

// Identity is where a process runs and since when. Embedded in a record,
// its fields are the record's own (JSON included).
type Identity struct {
	Hostname string `json:"hostname,omitempty"`
	PID      int    `json:"pid,omitempty"`
	// Started is when the process started.
	Started time.Time `json:"started,omitzero"`
}

// Self returns this process's Identity with the given start time; the
// hostname is "unknown-host" when the system does not say.
func Self(started time.Time) Identity {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	return Identity{Hostname: host, PID: os.Getpid(), Started: started}
}
