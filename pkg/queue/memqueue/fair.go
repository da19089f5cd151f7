package memqueue

import (
	"sort"
	"time"
)

// FairShare is the share of the in-flight messages above which a tenant
// of a Config.Fair queue is noisy (AWS documents 10%).
const FairShare = 0.10

// deliveryOrderLocked is the order receives look at the messages in: send
// order; on a Fair queue, the messages of quiet tenants first, then those
// of noisy ones, the tenant with the fewest in flight first, each in send
// order.
//
// AWS flags a tenant (MessageGroupId) as noisy when it holds more than 10%
// of the queue's in-flight messages and at least 30 of them, or more than
// 10% of the consumers' recent processing time, and then hands consumers
// the quiet tenants' messages while there are any, then the noisy tenant's
// with the fewest in flight. memqueue approximates
// both measures by the share of the in-flight messages alone (more than
// FairShare, with no minimum: a consumer holding a single tenant's work
// is, by processing time, all that tenant's). A message without a group is
// a tenant of its own, never noisy.
func (q *Queue) deliveryOrderLocked(now time.Time) []*message {
	if !q.cfg.Fair {
		return q.msgs
	}
	inFlight := map[string]int{}
	total := 0
	for _, m := range q.msgs {
		if !m.gone && m.inFlight && now.Before(m.visibleAt) {
			total++
			if m.group != "" {
				inFlight[m.group]++
			}
		}
	}
	noisy := func(m *message) bool {
		return m.group != "" && float64(inFlight[m.group]) > FairShare*float64(total)
	}
	out := make([]*message, 0, len(q.msgs))
	var later []*message
	for _, m := range q.msgs {
		if noisy(m) {
			later = append(later, m)
		} else {
			out = append(out, m)
		}
	}
	// Among noisy tenants, the one with the fewest in flight first.
	sort.SliceStable(later, func(i, j int) bool { return inFlight[later[i].group] < inFlight[later[j].group] })
	return append(out, later...)
}
