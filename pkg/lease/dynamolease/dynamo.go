package dynamolease

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/dynamotable"

	"github.com/millfleet/mill/pkg/lease"
)

// Item attributes. The key and the TTL attribute are table.go's (the
// unexported names are what table_test.go checks). Times are epoch seconds.
const (
	attrName     = AttrName
	attrExpires  = AttrExpiresAt
	attrHolder   = "holder"
	attrStarted  = "started_at"
	attrAcquired = "acquired_at"
)

// identity is how a lease item holds its holder's process (hostname, pid,
// started_at).
var identity = dynamotable.Identity{Started: attrStarted}

// API is the part of the DynamoDB client Lease uses.
type API interface {
	dynamotable.PutItemAPI
	dynamotable.GetItemAPI
	dynamotable.UpdateItemAPI
	dynamotable.DeleteItemAPI
}

// Lease is a lease.Lease kept in a DynamoDB table (one item per lease name; see
// table.go for the table). Every change is a conditional write, so
// exclusivity holds across processes and hosts.
type Lease struct{ t dynamotable.Table[API] }

var _ lease.Lease = (*Lease)(nil)

// New returns a DynamoDB lease store on table; clk supplies "now" for
// the conditions and expiries (the real clock when nil).
func New(c API, table string, clk clock.Clock) *Lease {
	return &Lease{t: dynamotable.Open(c, table, clk)}
}

func key(name string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrName: dynamotable.S(name)}
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
		now := l.t.Clock.Now()
		holder.Acquired = now.UTC().Truncate(time.Second)
		holder.Expires = lease.Expiry(now, ttl).UTC()
		item := map[string]types.AttributeValue{
			attrName:     dynamotable.S(name),
			attrHolder:   dynamotable.S(holder.ID),
			attrExpires:  dynamotable.Unix(holder.Expires),
			attrAcquired: dynamotable.Unix(holder.Acquired),
		}
		identity.Put(item, holder.Identity)
		_, err := l.t.Client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:           aws.String(l.t.Name),
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(#n) OR #e < :now OR #h = :me"),
			ExpressionAttributeNames: map[string]string{
				"#n": attrName, "#e": attrExpires, "#h": attrHolder,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now": dynamotable.Unix(now), ":me": dynamotable.S(holder.ID),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return true, holder, nil
		}
		found, failed := dynamotable.ConditionFailed(err)
		if !failed {
			return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: %w", name, err)
		}
		if len(found) > 0 {
			return false, fromItem(found), nil
		}
		out, err := l.t.Client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName: aws.String(l.t.Name), Key: key(name), ConsistentRead: aws.Bool(true),
		})
		if err != nil {
			return false, lease.Holder{}, fmt.Errorf("lease: acquire %q: read holder: %w", name, err)
		}
		if len(out.Item) > 0 {
			cur := fromItem(out.Item)
			if cur.ID != holder.ID && !lease.Expired(cur.Expires, l.t.Clock.Now()) {
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
	out, err := l.t.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(l.t.Name),
		Key:                       key(name),
		UpdateExpression:          aws.String("SET #e = :exp"),
		ConditionExpression:       aws.String("#h = :me"),
		ExpressionAttributeNames:  map[string]string{"#e": attrExpires, "#h": attrHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{":exp": dynamotable.Unix(lease.Expiry(l.t.Clock.Now(), ttl)), ":me": dynamotable.S(holderID)},
		ReturnValues:              types.ReturnValueAllNew,
	})
	if err != nil {
		if _, failed := dynamotable.ConditionFailed(err); failed {
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
	_, err := l.t.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(l.t.Name),
		Key:                       key(name),
		ConditionExpression:       aws.String("#h = :me"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHolder},
		ExpressionAttributeValues: map[string]types.AttributeValue{":me": dynamotable.S(holderID)},
	})
	if err != nil {
		if _, failed := dynamotable.ConditionFailed(err); failed {
			return fmt.Errorf("lease: release %q: %w", name, lease.ErrNotHeld)
		}
		return fmt.Errorf("lease: release %q: %w", name, err)
	}
	return nil
}

// fromItem reads a lease item; missing or malformed attributes are left
// zero (an operator-edited item must not break a second invocation's
// message).
func fromItem(it dynamotable.Item) lease.Holder {
	return lease.Holder{
		ID:       it.S(attrHolder),
		Identity: identity.Of(it),
		Acquired: it.Unix(attrAcquired),
		Expires:  it.Unix(attrExpires),
	}
}
