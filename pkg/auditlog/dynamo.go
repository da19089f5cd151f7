package auditlog

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoAPI is the part of *dynamodb.Client the DynamoDB log uses.
type DynamoAPI interface {
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ DynamoAPI = (*dynamodb.Client)(nil)

// Dynamo is the audit log in a DynamoDB table created with CreateTableInput.
// Safe for concurrent use.
type Dynamo struct {
	api   DynamoAPI
	table string
}

var _ Log = (*Dynamo)(nil)

// NewDynamo returns the log in table, reached through api.
func NewDynamo(api DynamoAPI, table string) *Dynamo { return &Dynamo{api: api, table: table} }

// Put implements Log: a PutItem conditional on the key being new.
func (d *Dynamo) Put(ctx context.Context, e Entry) (bool, error) {
	pk := ItemKey(e.Account, e.StoreID, e.SpaceID, e.ContentID)
	attrs, err := checkEntry(e)
	if err != nil {
		return false, fmt.Errorf("auditlog: put %s: %w", pk, err)
	}
	item := make(map[string]types.AttributeValue, len(attrs))
	for _, a := range attrs {
		if a.number {
			item[a.name] = &types.AttributeValueMemberN{Value: a.value}
		} else {
			item[a.name] = &types.AttributeValueMemberS{Value: a.value}
		}
	}
	_, err = d.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(d.table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	})
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("auditlog: put %s: %w", pk, err)
	}
	return true, nil
}

func entryFromItem(item map[string]types.AttributeValue) (Entry, error) {
	return entryFromAttrs(func(name string) (string, bool) {
		switch v := item[name].(type) {
		case *types.AttributeValueMemberS:
			return v.Value, true
		case *types.AttributeValueMemberN:
			return v.Value, true
		}
		return "", false
	})
}

// Latest implements Log: a strongly consistent query of the item's
// partition, newest first, limit 1.
func (d *Dynamo) Latest(ctx context.Context, account, storeID, spaceID, contentID string) (*Entry, error) {
	return d.latest(ctx, ItemKey(account, storeID, spaceID, contentID), 1, func(Entry) bool { return true })
}

// LatestChecksum implements Log: the same query, read in pages of 10
// until an entry speaks of the item's bytes (an item has few entries
// without a checksum in a row, so one page is the rule).
func (d *Dynamo) LatestChecksum(ctx context.Context, account, storeID, spaceID, contentID string) (*Entry, error) {
	return d.latest(ctx, ItemKey(account, storeID, spaceID, contentID), 10, SpeaksOfBytes)
}

// latest returns the newest entry of item pk that keep accepts, reading
// the partition newest first in pages of page entries.
func (d *Dynamo) latest(ctx context.Context, pk string, page int32, keep func(Entry) bool) (*Entry, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.table),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(page),
	}
	for {
		out, err := d.api.Query(ctx, in)
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
			return nil, fmt.Errorf("auditlog: latest %s: %w", pk, ErrNotFound)
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// SpaceHistory implements Log: a query of the space-history index. The
// page token is the query's LastEvaluatedKey (all string attributes),
// base64url-encoded JSON.
func (d *Dynamo) SpaceHistory(ctx context.Context, account, storeID, spaceID, pageToken string, limit int) ([]Entry, string, error) {
	gpk := SpaceKey(account, storeID, spaceID)
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.table),
		IndexName:                 aws.String(IndexSpaceHistory),
		KeyConditionExpression:    aws.String("#g = :g"),
		ExpressionAttributeNames:  map[string]string{"#g": AttrGSI1PK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":g": &types.AttributeValueMemberS{Value: gpk}},
		ScanIndexForward:          aws.Bool(true),
		Limit:                     aws.Int32(int32(pageSize(limit))),
	}
	if pageToken != "" {
		start, err := decodeDynamoToken(pageToken, gpk)
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
		}
		in.ExclusiveStartKey = start
	}
	out, err := d.api.Query(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
	}
	entries := make([]Entry, 0, len(out.Items))
	for _, item := range out.Items {
		e, err := entryFromItem(item)
		if err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
		}
		entries = append(entries, e)
	}
	next := ""
	if len(out.LastEvaluatedKey) > 0 {
		if next, err = encodeDynamoToken(out.LastEvaluatedKey); err != nil {
			return nil, "", fmt.Errorf("auditlog: space history %s: %w", gpk, err)
		}
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
	b, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func decodeDynamoToken(tok, gpk string) (map[string]types.AttributeValue, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	var m map[string]string
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil || m[AttrGSI1PK] != gpk || m[AttrPK] == "" || m[AttrSK] == "" || m[AttrGSI1SK] == "" {
		return nil, ErrBadPageToken
	}
	out := make(map[string]types.AttributeValue, 4)
	for _, k := range []string{AttrPK, AttrSK, AttrGSI1PK, AttrGSI1SK} {
		out[k] = &types.AttributeValueMemberS{Value: m[k]}
	}
	return out, nil
}

// Delete implements Log: one DeleteItem per key (deleting an absent item
// succeeds).
func (d *Dynamo) Delete(ctx context.Context, keys ...Key) error {
	for _, k := range keys {
		sk, err := k.SK()
		if err != nil {
			return fmt.Errorf("auditlog: delete %s: %w", k.PK(), err)
		}
		_, err = d.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: aws.String(d.table),
			Key: map[string]types.AttributeValue{
				AttrPK: &types.AttributeValueMemberS{Value: k.PK()},
				AttrSK: &types.AttributeValueMemberS{Value: sk},
			},
		})
		if err != nil {
			return fmt.Errorf("auditlog: delete %s %s: %w", k.PK(), sk, err)
		}
	}
	return nil
}
