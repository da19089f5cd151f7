package dynamofleet

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/dynamotable"

	"github.com/millfleet/mill/pkg/fleet"
)

// Item attributes besides the keys, the TTL (table.go) and the process
// identity (hostname, pid and started_ms: identity). Times are epoch
// milliseconds, except expires_at (epoch seconds, as TTL wants).
const (
	attrInstanceID = "instance_id"
	attrZone       = "zone"
	attrVersion    = "version"
	attrStarted    = "started_ms"
	attrHeartbeat  = "heartbeat_ms"
	attrInterval   = "interval_ms"
	attrQueues     = "queues"
	attrPool       = "pool"
	attrHeld       = "held"
	attrRunning    = "running"
	attrCounts     = "counts"
	attrState      = "state"
	attrPauses     = "pauses"
	attrNote       = "note"
	attrOutages    = "outages"

	attrPauseKind = "pause_kind"
	attrName      = "name"
	attrBy        = "by"
	attrAt        = "at_ms"
	attrReason    = "reason"

	attrProcessed    = "processed"
	attrFailed       = "failed"
	attrDeadLettered = "dead_lettered"
)

// identity is how a worker item holds the worker's process.
var identity = dynamotable.Identity{Started: attrStarted, Millis: true}

// API is the part of the DynamoDB client Registry uses.
type API interface {
	dynamotable.PutItemAPI
	dynamotable.DeleteItemAPI
	dynamotable.QueryAPI
}

// Registry is a fleet.Registry in a DynamoDB table (table.go). A heartbeat is one
// PutItem; reading the pauses is one Query (strongly consistent) while the
// pauses fit in one page (1 MB: thousands).
type Registry struct{ t dynamotable.Table[API] }

var _ fleet.Registry = (*Registry)(nil)

// New returns a DynamoDB registry on table; clk decides which records
// have expired (the real clock when nil).
func New(c API, table string, clk clock.Clock) *Registry {
	return &Registry{t: dynamotable.Open(c, table, clk)}
}

// Put implements fleet.Registry with one PutItem.
func (d *Registry) Put(ctx context.Context, w fleet.Worker) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("fleet: put %q: %w", w.ID, err)
	}
	item := map[string]types.AttributeValue{
		AttrKind:      dynamotable.S(KindWorker),
		AttrID:        dynamotable.S(w.ID),
		AttrExpiresAt: dynamotable.N(fleet.ExpirySeconds(w.Expires)),
		attrHeartbeat: dynamotable.UnixMilli(w.Heartbeat),
		attrInterval:  dynamotable.N(w.Interval.Milliseconds()),
		attrQueues:    dynamotable.Strings(w.Queues),
		attrPool:      dynamotable.N(int64(w.Pool)),
		attrHeld:      dynamotable.N(int64(w.Held)),
		attrState:     dynamotable.S(string(w.State)),
		attrPauses:    dynamotable.Strings(w.Pauses),
	}
	identity.Put(item, w.Identity)
	for k, v := range map[string]string{attrInstanceID: w.InstanceID, attrZone: w.Zone, attrVersion: w.Version, attrNote: w.Note} {
		if v != "" {
			item[k] = dynamotable.S(v)
		}
	}
	running := map[string]types.AttributeValue{}
	for t, n := range w.Running {
		running[t] = dynamotable.N(int64(n))
	}
	item[attrRunning] = &types.AttributeValueMemberM{Value: running}
	counts := map[string]types.AttributeValue{}
	for t, c := range w.Counts {
		counts[t] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			attrProcessed: dynamotable.N(c.Processed), attrFailed: dynamotable.N(c.Failed), attrDeadLettered: dynamotable.N(c.DeadLettered),
		}}
	}
	item[attrCounts] = &types.AttributeValueMemberM{Value: counts}
	if len(w.Outages) > 0 {
		item[attrOutages] = outagesItem(w.Outages)
	}
	if _, err := d.t.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.t.Name), Item: item}); err != nil {
		return fmt.Errorf("fleet: put %q: %w", w.ID, err)
	}
	return nil
}

// query reads every item of one partition.
func (d *Registry) query(ctx context.Context, kind string) ([]map[string]types.AttributeValue, error) {
	p := dynamodb.NewQueryPaginator(d.t.Client, &dynamodb.QueryInput{
		TableName:                 aws.String(d.t.Name),
		KeyConditionExpression:    aws.String("#k = :k"),
		ExpressionAttributeNames:  map[string]string{"#k": AttrKind},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": dynamotable.S(kind)},
		ConsistentRead:            aws.Bool(true),
	})
	var items []map[string]types.AttributeValue
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		items = append(items, out.Items...)
	}
	return items, nil
}

// Workers implements fleet.Registry with a Query of the worker partition.
func (d *Registry) Workers(ctx context.Context) ([]fleet.Worker, error) {
	items, err := d.query(ctx, KindWorker)
	if err != nil {
		return nil, fmt.Errorf("fleet: list workers: %w", err)
	}
	now := d.t.Clock.Now()
	ws := make([]fleet.Worker, 0, len(items))
	for _, it := range items {
		w := workerFromItem(it)
		if now.Before(w.Expires) {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].ID < ws[j].ID })
	return ws, nil
}

// Pause implements fleet.Registry with one PutItem.
func (d *Registry) Pause(ctx context.Context, p fleet.Pause) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("fleet: pause: %w", err)
	}
	item := map[string]types.AttributeValue{
		AttrKind:      dynamotable.S(KindPause),
		AttrID:        dynamotable.S(p.Key()),
		attrPauseKind: dynamotable.S(string(p.Kind)),
		attrName:      dynamotable.S(p.Name),
	}
	if !p.At.IsZero() {
		item[attrAt] = dynamotable.UnixMilli(p.At)
	}
	if p.By != "" {
		item[attrBy] = dynamotable.S(p.By)
	}
	if p.Reason != "" {
		item[attrReason] = dynamotable.S(p.Reason)
	}
	if _, err := d.t.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.t.Name), Item: item}); err != nil {
		return fmt.Errorf("fleet: pause %s: %w", p.Key(), err)
	}
	return nil
}

// Resume implements fleet.Registry with one DeleteItem.
func (d *Registry) Resume(ctx context.Context, kind fleet.PauseKind, name string) (bool, error) {
	p := fleet.Pause{Kind: kind, Name: name}
	if err := p.Validate(); err != nil {
		return false, fmt.Errorf("fleet: resume: %w", err)
	}
	out, err := d.t.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(d.t.Name),
		Key:          map[string]types.AttributeValue{AttrKind: dynamotable.S(KindPause), AttrID: dynamotable.S(p.Key())},
		ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return false, fmt.Errorf("fleet: resume %s: %w", p.Key(), err)
	}
	return len(out.Attributes) > 0, nil
}

// Pauses implements fleet.Registry with one Query of the pause partition.
func (d *Registry) Pauses(ctx context.Context) ([]fleet.Pause, error) {
	items, err := d.query(ctx, KindPause)
	if err != nil {
		return nil, fmt.Errorf("fleet: read pauses: %w", err)
	}
	ps := make([]fleet.Pause, 0, len(items))
	for _, it := range items {
		r := dynamotable.Item(it)
		ps = append(ps, fleet.Pause{
			Kind: fleet.PauseKind(r.S(attrPauseKind)), Name: r.S(attrName),
			By: r.S(attrBy), At: r.UnixMilli(attrAt), Reason: r.S(attrReason),
		})
	}
	fleet.SortPauses(ps)
	return ps, nil
}

func workerFromItem(it map[string]types.AttributeValue) fleet.Worker {
	r := dynamotable.Item(it)
	w := fleet.Worker{
		ID: r.S(AttrID), Identity: identity.Of(r),
		InstanceID: r.S(attrInstanceID), Zone: r.S(attrZone), Version: r.S(attrVersion),
		Heartbeat: r.UnixMilli(attrHeartbeat),
		Interval:  time.Duration(r.N(attrInterval)) * time.Millisecond,
		Expires:   time.Unix(r.N(AttrExpiresAt), 0).UTC(),
		Queues:    r.Strings(attrQueues), Pool: int(r.N(attrPool)), Held: int(r.N(attrHeld)),
		State: fleet.State(r.S(attrState)), Pauses: r.Strings(attrPauses), Note: r.S(attrNote),
	}
	w.Outages = outagesOf(r[attrOutages])
	if m := r.M(attrRunning); len(m) > 0 {
		w.Running = map[string]int{}
		for t := range m {
			w.Running[t] = int(m.N(t))
		}
	}
	if m := r.M(attrCounts); len(m) > 0 {
		w.Counts = map[string]fleet.Counts{}
		for t := range m {
			c := m.M(t)
			w.Counts[t] = fleet.Counts{Processed: c.N(attrProcessed), Failed: c.N(attrFailed), DeadLettered: c.N(attrDeadLettered)}
		}
	}
	return w
}

// An outage is a map in the worker's outages list: dependency, since_ms,
// cause, types.
const (
	attrDependency = "dependency"
	attrSince      = "since_ms"
	attrCause      = "cause"
	attrTypes      = "types"
)

func outagesItem(os []fleet.Outage) types.AttributeValue {
	l := make([]types.AttributeValue, len(os))
	for i, o := range os {
		m := map[string]types.AttributeValue{attrDependency: dynamotable.S(o.Dependency), attrSince: dynamotable.UnixMilli(o.Since), attrTypes: dynamotable.Strings(o.Types)}
		if o.Cause != "" {
			m[attrCause] = dynamotable.S(o.Cause)
		}
		l[i] = &types.AttributeValueMemberM{Value: m}
	}
	return &types.AttributeValueMemberL{Value: l}
}

func outagesOf(v types.AttributeValue) []fleet.Outage {
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok || len(l.Value) == 0 {
		return nil
	}
	out := make([]fleet.Outage, 0, len(l.Value))
	for _, e := range l.Value {
		m, ok := e.(*types.AttributeValueMemberM)
		if !ok {
			continue
		}
		r := dynamotable.Item(m.Value)
		out = append(out, fleet.Outage{Dependency: r.S(attrDependency), Since: r.UnixMilli(attrSince), Cause: r.S(attrCause), Types: r.Strings(attrTypes)})
	}
	return out
}
