package dynamotable

import (
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// S is a string attribute.
func S(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// N is a number attribute.
func N(i int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(i, 10)}
}

// Unix is a time as a number of epoch seconds (the unit of DynamoDB's TTL).
func Unix(t time.Time) types.AttributeValue { return N(t.Unix()) }

// UnixMilli is a time as a number of epoch milliseconds.
func UnixMilli(t time.Time) types.AttributeValue { return N(t.UnixMilli()) }

// Strings is a list of string attributes.
func Strings(ss []string) types.AttributeValue {
	l := make([]types.AttributeValue, len(ss))
	for i, s := range ss {
		l[i] = S(s)
	}
	return &types.AttributeValueMemberL{Value: l}
}

// Item is an item's attributes, read leniently: a missing or malformed
// attribute reads as zero, so an item edited by hand cannot break a
// listing or a message.
type Item map[string]types.AttributeValue

// S reads string attribute k.
func (it Item) S(k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// N reads number attribute k (an integer).
func (it Item) N(k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		i, _ := strconv.ParseInt(v.Value, 10, 64)
		return i
	}
	return 0
}

// Unix reads a time written by Unix (UTC; the zero time for 0).
func (it Item) Unix(k string) time.Time {
	if i := it.N(k); i != 0 {
		return time.Unix(i, 0).UTC()
	}
	return time.Time{}
}

// UnixMilli reads a time written by UnixMilli (UTC; the zero time for 0).
func (it Item) UnixMilli(k string) time.Time {
	if i := it.N(k); i != 0 {
		return time.UnixMilli(i).UTC()
	}
	return time.Time{}
}

// Strings reads a list written by Strings, skipping elements that are
// not strings (nil for an empty list).
func (it Item) Strings(k string) []string {
	l, ok := it[k].(*types.AttributeValueMemberL)
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

// M reads map attribute k.
func (it Item) M(k string) Item {
	if m, ok := it[k].(*types.AttributeValueMemberM); ok {
		return m.Value
	}
	return nil
}

// ConditionFailed reports whether a write failed on its condition
// expression, with the item the write found there when the write asked
// for it (ReturnValuesOnConditionCheckFailure ALL_OLD) and one existed.
func ConditionFailed(err error) (Item, bool) {
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		return nil, false
	}
	return ccf.Item, true
}
