package dynamofleet

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/clock"

	"github.com/millfleet/mill/pkg/fleet"
)

// Item attributes besides the keys and the TTL (table.go). Times are epoch
// milliseconds, except expires_at (epoch seconds, as TTL wants).
const (
	attrHostname   = "hostname"
	attrPID        = "pid"
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

// API is the part of the DynamoDB client Registry uses.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Registry is a fleet.Registry in a DynamoDB table (table.go). A heartbeat is one
// PutItem; reading the pauses is one Query (strongly consistent) while the
// pauses fit in one page (1 MB: thousands).
type Registry struct {
	c     API
	table string
	clk   clock.Clock
}

var _ fleet.Registry = (*Registry)(nil)

// New returns a DynamoDB registry on table; clk decides which records
// have expired (the real clock when nil).
func New(c API, table string, clk clock.Clock) *Registry {
	return &Registry{c: c, table: table, clk: clock.Or(clk)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(i int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(i, 10)}
}
func ms(t time.Time) types.AttributeValue { return num(t.UnixMilli()) }

func strList(ss []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(ss))
	for i, s := range ss {
		l[i] = str(s)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// Put implements fleet.Registry with one PutItem.
func (d *Registry) Put(ctx context.Context, w fleet.Worker) error {
	if err := w.Validate(); err != nil {
		return fmt.Errorf("fleet: put %q: %w", w.ID, err)
	}
	item := map[string]types.AttributeValue{
		AttrKind:      str(KindWorker),
		AttrID:        str(w.ID),
		AttrExpiresAt: num(fleet.ExpirySeconds(w.Expires)),
		attrPID:       num(int64(w.PID)),
		attrHeartbeat: ms(w.Heartbeat),
		attrInterval:  num(w.Interval.Milliseconds()),
		attrQueues:    strList(w.Queues),
		attrPool:      num(int64(w.Pool)),
		attrHeld:      num(int64(w.Held)),
		attrState:     str(string(w.State)),
		attrPauses:    strList(w.Pauses),
	}
	if !w.Started.IsZero() {
		item[attrStarted] = ms(w.Started)
	}
	for k, v := range map[string]string{attrHostname: w.Hostname, attrInstanceID: w.InstanceID, attrZone: w.Zone, attrVersion: w.Version, attrNote: w.Note} {
		if v != "" {
			item[k] = str(v)
		}
	}
	running := map[string]types.AttributeValue{}
	for t, n := range w.Running {
		running[t] = num(int64(n))
	}
	item[attrRunning] = &types.AttributeValueMemberM{Value: running}
	counts := map[string]types.AttributeValue{}
	for t, c := range w.Counts {
		counts[t] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
			attrProcessed: num(c.Processed), attrFailed: num(c.Failed), attrDeadLettered: num(c.DeadLettered),
		}}
	}
	item[attrCounts] = &types.AttributeValueMemberM{Value: counts}
	if len(w.Outages) > 0 {
		item[attrOutages] = outagesItem(w.Outages)
	}
	if _, err := d.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.table), Item: item}); err != nil {
		return fmt.Errorf("fleet: put %q: %w", w.ID, err)
	}
	return nil
}

// query reads every item of one partition.
func (d *Registry) query(ctx context.Context, kind string) ([]map[string]types.AttributeValue, error) {
	p := dynamodb.NewQueryPaginator(d.c, &dynamodb.QueryInput{
		TableName:                 aws.String(d.table),
		KeyConditionExpression:    aws.String("#k = :k"),
		ExpressionAttributeNames:  map[string]string{"#k": AttrKind},
		ExpressionAttributeValues: map[string]types.AttributeValue{":k": str(kind)},
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
	now := d.clk.Now()
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
		AttrKind:      str(KindPause),
		AttrID:        str(p.Key()),
		attrPauseKind: str(string(p.Kind)),
		attrName:      str(p.Name),
	}
	if !p.At.IsZero() {
		item[attrAt] = ms(p.At)
	}
	if p.By != "" {
		item[attrBy] = str(p.By)
	}
	if p.Reason != "" {
		item[attrReason] = str(p.Reason)
	}
	if _, err := d.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(d.table), Item: item}); err != nil {
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
	out, err := d.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(d.table),
		Key:          map[string]types.AttributeValue{AttrKind: str(KindPause), AttrID: str(p.Key())},
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
		r := reader(it)
		ps = append(ps, fleet.Pause{
			Kind: fleet.PauseKind(r.s(attrPauseKind)), Name: r.s(attrName),
			By: r.s(attrBy), At: r.ms(attrAt), Reason: r.s(attrReason),
		})
	}
	fleet.SortPauses(ps)
	return ps, nil
}

// reader reads item attributes; missing or malformed ones are left zero,
// so an item edited by hand cannot break a listing.
type reader map[string]types.AttributeValue

func (r reader) s(k string) string {
	if v, ok := r[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func numOf(v types.AttributeValue) int64 {
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(n.Value, 10, 64)
		return i
	}
	return 0
}

func (r reader) n(k string) int64 { return numOf(r[k]) }

func (r reader) ms(k string) time.Time {
	if i := r.n(k); i != 0 {
		return time.UnixMilli(i).UTC()
	}
	return time.Time{}
}

func (r reader) list(k string) []string {
	l, ok := r[k].(*types.AttributeValueMemberL)
	if !ok || len(l.Value) == 0 {
		return nil
	}
	out := make([]string, 0, len(l.Value))
	for _, v := range l.Value {
		if s, ok := v.(*types.AttributeValueMemberS); ok {
			out = append(out, s.Value)
		}
	}
	return out
}

func (r reader) m(k string) map[string]types.AttributeValue {
	if m, ok := r[k].(*types.AttributeValueMemberM); ok {
		return m.Value
	}
	return nil
}

func workerFromItem(it map[string]types.AttributeValue) fleet.Worker {
	r := reader(it)
	w := fleet.Worker{
		ID: r.s(AttrID), Identity: process.Identity{Hostname: r.s(attrHostname), PID: int(r.n(attrPID)), Started: r.ms(attrStarted)},
		InstanceID: r.s(attrInstanceID), Zone: r.s(attrZone), Version: r.s(attrVersion),
		Heartbeat: r.ms(attrHeartbeat),
		Interval:  time.Duration(r.n(attrInterval)) * time.Millisecond,
		Expires:   time.Unix(r.n(AttrExpiresAt), 0).UTC(),
		Queues:    r.list(attrQueues), Pool: int(r.n(attrPool)), Held: int(r.n(attrHeld)),
		State: fleet.State(r.s(attrState)), Pauses: r.list(attrPauses), Note: r.s(attrNote),
	}
	w.Outages = outagesOf(r[attrOutages])
	if m := r.m(attrRunning); len(m) > 0 {
		w.Running = map[string]int{}
		for t, v := range m {
			w.Running[t] = int(numOf(v))
		}
	}
	if m := r.m(attrCounts); len(m) > 0 {
		w.Counts = map[string]fleet.Counts{}
		for t, v := range m {
			c := reader{}
			if cm, ok := v.(*types.AttributeValueMemberM); ok {
				c = cm.Value
			}
			w.Counts[t] = fleet.Counts{Processed: c.n(attrProcessed), Failed: c.n(attrFailed), DeadLettered: c.n(attrDeadLettered)}
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
		m := map[string]types.AttributeValue{attrDependency: str(o.Dependency), attrSince: ms(o.Since), attrTypes: strList(o.Types)}
		if o.Cause != "" {
			m[attrCause] = str(o.Cause)
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
		r := reader(m.Value)
		out = append(out, fleet.Outage{Dependency: r.s(attrDependency), Since: r.ms(attrSince), Cause: r.s(attrCause), Types: r.list(attrTypes)})
	}
	return out
}
