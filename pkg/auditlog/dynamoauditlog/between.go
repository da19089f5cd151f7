package dynamoauditlog

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/dynamotable"
)

var _ auditlog.Between = (*Log)(nil)

// Between implements auditlog.Between: a strongly consistent scan of the
// table filtered on the time attribute, resumed from the token's key. A
// page of the scan holds at most limit items before the filter, so a page
// may be short, or empty while more follow.
func (d *Log) Between(ctx context.Context, since, until time.Time, pageToken string, limit int) ([]auditlog.Entry, string, error) {
	pk, sk, ok, err := auditlog.DecodeBetweenToken(pageToken)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: between: %w", err)
	}
	in := &dynamodb.ScanInput{
		TableName:                aws.String(d.t.Name),
		FilterExpression:         aws.String("#t >= :a AND #t < :b"),
		ExpressionAttributeNames: map[string]string{"#t": auditlog.AttrTime},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":a": dynamotable.UnixMilli(since),
			":b": dynamotable.UnixMilli(until),
		},
		ConsistentRead: aws.Bool(true),
		Limit:          aws.Int32(int32(auditlog.PageSize(limit))),
	}
	if ok {
		in.ExclusiveStartKey = tableKey(pk, sk)
	}
	sc, can := d.t.Client.(ScanAPI)
	if !can {
		return nil, "", fmt.Errorf("auditlog: between: the DynamoDB client given to New cannot Scan")
	}
	out, err := sc.Scan(ctx, in)
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: between: %w", err)
	}
	entries, next, err := page(out.Items, out.LastEvaluatedKey, func(last item) (string, error) {
		p, err := keyString(last, auditlog.AttrPK)
		if err != nil {
			return "", err
		}
		s, err := keyString(last, auditlog.AttrSK)
		return auditlog.BetweenToken(p, s), err
	})
	if err != nil {
		return nil, "", fmt.Errorf("auditlog: between: %w", err)
	}
	return entries, next, nil
}
