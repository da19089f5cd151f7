package dynamotable

import (
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/internal/base/process"
)

// The attributes of a process identity (see Identity).
const (
	AttrHostname = "hostname"
	AttrPID      = "pid"
)

// Identity is how a table's items hold a process.Identity (a lease's
// holder, a fleet worker): AttrHostname (S, left out when empty), AttrPID
// (N), and the start time (left out when zero) under the table's own
// attribute, Started, in epoch milliseconds when Millis, else seconds.
type Identity struct {
	Started string
	Millis  bool
}

// Put writes id into item.
func (c Identity) Put(item map[string]types.AttributeValue, id process.Identity) {
	if id.Hostname != "" {
		item[AttrHostname] = S(id.Hostname)
	}
	item[AttrPID] = N(int64(id.PID))
	switch {
	case id.Started.IsZero():
	case c.Millis:
		item[c.Started] = UnixMilli(id.Started)
	default:
		item[c.Started] = Unix(id.Started)
	}
}

// Of reads the identity Put wrote into it.
func (c Identity) Of(it Item) process.Identity {
	id := process.Identity{Hostname: it.S(AttrHostname), PID: int(it.N(AttrPID)), Started: it.Unix(c.Started)}
	if c.Millis {
		id.Started = it.UnixMilli(c.Started)
	}
	return id
}
