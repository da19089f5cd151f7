package dynamolease

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/internal/base/process"
	"github.com/millfleet/mill/pkg/clock"

	"github.com/millfleet/mill/pkg/lease"
)

// Item attributes. The key and the TTL attribute are table.go's (the
// unexported names are what table_test.go checks). Times are epoch seconds.
const (
	attrName     = AttrName
	attrExpires  = AttrExpiresAt
	attrHolder   = "holder"
	attrHostname = "hostname"
	attrPID      = "pid"
	attrStarted  = "started_at"
	attrAcquired = "acquired_at"
)

// API is the part of the DynamoDB client Lease uses.
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Lease is a lease.Lease kept in a DynamoDB table (one item per lease name; see
// table.go for the table). Every change is a conditional write, so
// exclusivity holds across processes and hosts.
type Lease struct {
	c     API
	table string
	clk   clock.Clock
}

var _ lease.Lease = (*Lease)(nil)

// New returns a DynamoDB lease store on table; clk supplies "now" for
// the conditions and expiries (the real clock when nil).
func New(c API, table string, clk clock.Clock) *Lease {
	return &Lease{c: c, table: table, clk: clock.Or(clk)}
}

func epoch(t time.Time) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.Unix(), 10)}
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func (l *Lease) key(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrName: str(name)}
}

// Acquire implements lease.Lease with one conditional PutItem:
// attribute_not_exists(name) OR expires_at < :now OR holder = :me.
func (l *Lease) Acquire(ctx context.Context, name string, holder lease.Holder, ttl time.Duration) (bool, lease.Holder, error) {
	if err := lease.CheckArgs(name, holder.ID, ttl, true); err != nil {
		return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: %w", name, err)
	}
	// A lost race against a Release can leave neither our write nor a
	// record to report; try again a few times in that case.
	for range 5 {
		now := l.clk.Now()
		holder.Acquired = now.UTC().Truncate(time.Second)
		holder.Expires = lease.Expiry(now, ttl).UTC()
		item := map[string]types.AttributeValue{
			attrName:     str(name),
			attrHolder:   str(holder.ID),
			attrExpires:  epoch(holder.Expires),
			attrAcquired: epoch(holder.Acquired),
			attrPID:      &types.AttributeValueMemberN{Value: strconv.Itoa(holder.PID)},
		}
		if holder.Hostname != "" {
			item[attrHostname] = str(holder.Hostname)
		}
		if !holder.Started.IsZero() {
			item[attrStarted] = epoch(holder.Started)
		}
		_, err := l.c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(l.table),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(#n) OR #e < :now OR #h = :me"),
			ExpressionAttributeNames: map[string]string{
				"#n": attrName, "#e": attrExpires, "#h": attrHolder,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now": epoch(now), ":me": str(holder.ID),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return true, holder, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: %w", name, err)
		}
		if len(ccf.Item) > 0 {
			return false, fromItem(ccf.Item), nil
		}
		out, err := l.c.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(l.table), Key: l.key(name), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: read holder: %w", name, err)
		}
		if len(out.Item) > 0 {
			cur := fromItem(out.Item)
			if cur.ID != holder.ID && !lease.Expired(cur.Expires, l.clk.Now()) {
				return false, cur, nil
			}
		}
	}
	return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: contended: gave up after 5 attempts", name)
}

// Renew implements lease.Lease with an UpdateItem conditional on the holder.
func (l *Lease) Renew(ctx context.Context, name, holderID string, ttl time.Duration) (lease.Holder, error) {
	if err := lease.CheckArgs(name, holderID, ttl, true); err != nil {
		return lease.Holder{}, fmt.Errorf("lease: renew %q: %w", name, err)
	}
	out, err := l.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.table),
		Key:                       l.key(name),
		UpdateExpression:          aws.String("SET #e = :exp"),
		ConditionExpression:       aws.String("#h = :me"),
		ExpressionAttributeNames:  map[string]string{"#e": attrExpires, "#h": attrHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{":exp": epoch(lease.Expiry(l.clk.Now(), ttl)), ":me": str(holderID)},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return lease.Holder{}, fmt.Errorf("lease: renew %q: %w", name, lease.ErrNotHeld)
		}
		return lease.Holder{}, fmt.Errorf("lease: renew %q: %w", name, err)
	}
	return fromItem(out.Attributes), nil
}

// Release implements lease.Lease with a DeleteItem conditional on the holder.
func (l *Lease) Release(ctx context.Context, name, holderID string) error {
	if err := lease.CheckArgs(name, holderID, 0, false); err != nil {
		return fmt.Errorf("lease: release %q: %w", name, err)
	}
	_, err := l.c.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(l.table),
		Key:                       l.key(name),
		ConditionExpression:       aws.String("#h = :me"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": str(holderID)},
	})
	if err != nil {
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return fmt.Errorf("lease: release %q: %w", name, lease.ErrNotHeld)
		}
		return fmt.Errorf("lease: release %q: %w", name, err)
	}
	return nil
}

// fromItem reads a lease item; missing or malformed attributes are left
// zero (an operator-edited item must not break a second invocation's
// message).
func fromItem(item map[string]types.AttributeValue) lease.Holder {
	s := func(k string) string {
		if v, ok := item[k].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	n := func(k string) int64 {
		if v, ok := item[k].(*types.AttributeValueMemberN); ok {
			i, _ := strconv.ParseInt(v.Value, 10, 64)
			return i
		}
		return 0
	}
	t := func(k string) time.Time {
		if i := n(k); i != 0 {
			return time.Unix(i, 0).UTC()
		}
		return time.Time{}
	}
	return lease.Holder{
		ID:       s(attrHolder),
		Identity: process.Identity{Hostname: s(attrHostname), PID: int(n(attrPID)), Started: t(attrStarted)},
		Acquired: t(attrAcquired),
		Expires:  t(attrExpires),
	}
}
