package memqueue

import (
	"maps"
	"time"
)

// State is a stored message's state.
type State int

// States of a stored message (see queue.Depth).
const (
	Gone     State = iota // deleted or moved (never in a snapshot)
	Visible               // ready to be received
	InFlight              // received, visibility timeout running
	Delayed               // sent with a delay that has not yet passed
)

func (s State) String() string {
	switch s {
	case Visible:
		return "visible"
	case InFlight:
		return "in flight"
	case Delayed:
		return "delayed"
	}
	return "gone"
}

func (m *message) state(now time.Time) State {
	switch {
	case m.gone:
		return Gone
	case !now.Before(m.visibleAt):
		return Visible
	case m.inFlight:
		return InFlight
	}
	return Delayed
}

// Snapshot is a copy of one stored message.
type Snapshot struct {
	ID           string
	Body         []byte
	Attributes   map[string]string
	Group        string
	ReceiveCount int
	SentAt       time.Time
	VisibleAt    time.Time
	State        State
}

// Messages returns a copy of the stored messages in send order.
func (q *Queue) Messages() []Snapshot {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.cfg.Clock.Now()
	var out []Snapshot
	for _, m := range q.msgs {
		if m.gone {
			continue
		}
		out = append(out, Snapshot{
			ID:           m.id,
			Body:         append([]byte(nil), m.body...),
			Attributes:   maps.Clone(m.attrs),
			Group:        m.group,
			ReceiveCount: m.receiveCount,
			SentAt:       m.sentAt,
			VisibleAt:    m.visibleAt,
			State:        m.state(now),
		})
	}
	return out
}

// Len returns the number of stored messages in any state.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs) - q.gone
}

// Requests returns how many SQS requests the calls so far would have cost,
// by SQS operation name (OpSend, OpReceive, …): one per Receive, Depth and Purge,
// one per started 10 entries of Send, Delete, ChangeVisibility and Release.
func (q *Queue) Requests() map[string]int64 { return q.requests.Snapshot() }

// RequestTotal is the sum of Requests.
func (q *Queue) RequestTotal() int64 { return q.requests.Total() }

// ResetRequests sets the request counts to zero.
func (q *Queue) ResetRequests() { q.requests.Reset() }
