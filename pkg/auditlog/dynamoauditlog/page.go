package dynamoauditlog

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/dynamotable"
)

// item is one DynamoDB item or key.
type item = map[string]types.AttributeValue

// page reads one page of a Query or a Scan: the entries of its items and
// the token of the next page, which next makes from the page's last key
// ("" when the page is the last).
func page(items []item, last item, next func(last item) (string, error)) ([]auditlog.Entry, string, error) {
	entries, err := entriesFromItems(items)
	if err != nil || len(last) == 0 {
		return entries, "", err
	}
	tok, err := next(last)
	if err != nil {
		return nil, "", err
	}
	return entries, tok, nil
}

// tableKey is the table key of an entry: its item key and sort key.
func tableKey(pk, sk string) item {
	return item{
		auditlog.AttrPK: dynamotable.S(pk),
		auditlog.AttrSK: dynamotable.S(sk),
	}
}

// keyString reads the string attribute name of a page's last key.
func keyString(last item, name string) (string, error) {
	s, ok := last[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("unexpected page key %v", last)
	}
	return s.Value, nil
}
