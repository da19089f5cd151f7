package dynamoauditlog

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/internal/base/paging"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/dynamotable"
)

// API is the part of *dynamodb.Client the DynamoDB log uses.
type API interface {
	dynamotable.PutItemAPI
	dynamotable.QueryAPI
	dynamotable.DeleteItemAPI
}

// ScanAPI is the call Between adds, kept out of API so that Workman's
// role, granted exactly what API calls (infra/grants_test.go), needs no
// Scan: only the evidence appender reads a time range.
type ScanAPI = dynamotable.ScanAPI

// Log is the audit log in a DynamoDB table created with CreateTableInput.
// Safe for concurrent use.
type Log struct{ t dynamotable.Table[API] }

var _ auditlog.Log = (*Log)(nil)

// New returns the log in table, reached through api.
func New(api API, table string) *Log { return &Log{t: dynamotable.Open(api, table, nil)} }

// Put implements auditlog.Log: a PutItem conditional on the key being new.
func (d *Log) Put(ctx context.Context, e auditlog.Entry) (bool, error) {
	pk := auditlog.ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID)
	attrs, err := auditlog.CheckEntry(e)
	if err != nil {
		return false, fmt.Errorf("auditlog: put %s: %w", pk, err)
	}
	item := make(map[string]types.AttributeValue, len(attrs))
	for _, a := range attrs {
		if a.Number {
			item[a.Name] = &types.AttributeValueMemberN{Value: a.Value}
		} else {
			item[a.Name] = dynamotable.S(a.Value)
		}
	}
	_, err = d.t.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(d.t.Name),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": auditlog.AttrPK},
	})
	_, exists := dynamotable.ConditionFailed(err)
	switch {
	case exists:
		return false, nil
	case err != nil:
		return false, fmt.Errorf("auditlog: put %s: %w", pk, err)
	}
	return true, nil
}

func entryFromItem(item map[string]types.AttributeValue) (auditlog.Entry, error) {
	return auditlog.EntryFromAttrs(func(name string) (string, bool) {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			return v.Value, true
		case *types.AttributeValueMemberN:
			return v.Value, true
		}
		return "", false
	})
}

// entriesFromItems returns the entries of a page of items.
func entriesFromItems(items []map[string]types.AttributeValue) ([]auditlog.Entry, error) {
	entries := make([]auditlog.Entry, 0, len(items))
	for _, item := range items {
		e, err := entryFromItem(item)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// Latest implements auditlog.Log: a strongly consistent query of the item's
// partition, newest first, limit 1.
func (d *Log) Latest(ctx context.Context, account, storeID, spaceID, contentID string) (*auditlog.Entry, error) {
	return d.latest(ctx, auditlog.ItemKey(account, storeID, spaceID, contentID), 1, func(auditlog.Entry) bool { return true })
}

// LatestChecksum implements auditlog.Log: the same query, read in pages of 10
// until an entry speaks of the item's bytes (an item has few entries
// without a checksum in a row, so one page is the rule).
func (d *Log) LatestChecksum(ctx context.Context, account, storeID, spaceID, contentID string) (*auditlog.Entry, error) {
	return d.latest(ctx, auditlog.ItemKey(account, storeID, spaceID, contentID), 10, auditlog.SpeaksOfBytes)
}

// itemQuery is a strongly consistent Query of item pk's partition,
// newest first, in pages of limit entries.
func (d *Log) itemQuery(pk string, limit int32) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(d.t.Name),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": auditlog.AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": dynamotable.S(pk)},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(limit),
	}
}

// latest returns the newest entry of item pk that keep accepts, reading
// the partition newest first in pages of page entries.
func (d *Log) latest(ctx context.Context, pk string, page int32, keep func(auditlog.Entry) bool) (*auditlog.Entry, error) {
	in := d.itemQuery(pk, page)
	for {
		out, err := d.t.Client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("auditlog: latest %s: %w", pk, err)
		}
		for _, item := range out.Items {
			e, err := entryFromItem(item)
			if err != nil {
				return nil, fmt.Errorf("auditlog: latest %s: %w", pk, err)
			}
			if keep(e) {
				return &e, nil
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil, fmt.Errorf("auditlog: latest %s: %w", pk, auditlog.ErrNotFound)
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// SpaceHistory implements auditlog.Log: a query of the space-history index. The
// page token is the query's LastEvaluatedKey (all string attributes),
// base64url-encoded JSON.
func (d *Log) SpaceHistory(ctx context.Context, account, storeID, spaceID, pageToken string, limit int) ([]auditlog.Entry, string, error) {
	gpk := auditlog.SpaceKey(account, storeID, spaceID)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.t.Name),
		IndexName:                 aws.String(auditlog.IndexSpaceHistory),
		KeyConditionExpression:    aws.String("#g = :g"),
		ExpressionAttributeNames:  map[string]string{"#g": auditlog.AttrGSI1PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": dynamotable.S(gpk)},
		ScanIndexForward:          aws.Bool(true),
		Limit:                     aws.Int32(int32(auditlog.PageSize(limit))),
	}
	if pageToken != "" {
		start, err := decodeDynamoToken(pageToken, gpk)
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := d.t.Client.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
	}
	entries, next, err := page(out.Items, out.LastEvaluatedKey, encodeDynamoToken)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
	}
	return entries, next, nil
}

func encodeDynamoToken(key map[string]types.AttributeValue) (string, error) {
	m := make(map[string]string, len(key))
	for k, v := range key {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("unexpected key attribute %s of type %T", k, v)
		}
		m[k] = s.Value
	}
	return paging.EncodeToken(m)
}

func decodeDynamoToken(tok, gpk string) (map[string]types.AttributeValue, error) {
	var m map[string]string
	err := paging.DecodeToken(tok, &m)
	if err == nil && (m[auditlog.AttrGSI1PK] != gpk || m[auditlog.AttrPK] == "" || m[auditlog.AttrSK] == "" || m[auditlog.AttrGSI1SK] == "") {
		err = fmt.Errorf("%w: %q", auditlog.ErrBadPageToken, tok)
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]types.AttributeValue, 4)
	for _, k := range []string{auditlog.AttrPK, auditlog.AttrSK, auditlog.AttrGSI1PK, auditlog.AttrGSI1SK} {
		out[k] = dynamotable.S(m[k])
	}
	return out, nil
}

// Delete implements auditlog.Log: one DeleteItem per key (deleting an absent item
// succeeds).
func (d *Log) Delete(ctx context.Context, keys ...auditlog.Key) error {
	for _, k := range keys {
		sk, err := k.SK()
		if err != nil {
			return fmt.Errorf("auditlog: delete %s: %w", k.PK(), err)
		}
		_, err = d.t.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(d.t.Name),
			Key: map[string]types.AttributeValue{
				auditlog.AttrPK: dynamotable.S(k.PK()),
				auditlog.AttrSK: dynamotable.S(sk),
			},
		})
		if err != nil {
			return fmt.Errorf("auditlog: delete %s %s: %w", k.PK(), sk, err)
		}
	}
	return nil
}
