package dynamotable

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/millfleet/mill/pkg/clock"
)

// The DynamoDB calls Mill's backends make, one interface each, all
// satisfied by *dynamodb.Client. A backend's client interface embeds the
// calls it makes and no other: that list is what its role must be granted
// on the table (infra/grants_test.go holds Workman's audit-log grant to it).
type (
	PutItemAPI interface {
		PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	}
	GetItemAPI interface {
		GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	}
	UpdateItemAPI interface {
		UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	}
	DeleteItemAPI interface {
		DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	}
	QueryAPI interface {
		Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	}
	ScanAPI interface {
		Scan(context.Context, *dynamodb.ScanInput, ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error)
	}
)

var (
	_ PutItemAPI    = (*dynamodb.Client)(nil)
	_ GetItemAPI    = (*dynamodb.Client)(nil)
	_ UpdateItemAPI = (*dynamodb.Client)(nil)
	_ DeleteItemAPI = (*dynamodb.Client)(nil)
	_ QueryAPI      = (*dynamodb.Client)(nil)
	_ ScanAPI       = (*dynamodb.Client)(nil)
)

// Table is a backend's handle on one of Mill's tables: the client (of
// the backend's own interface, C), the table's name, and the clock that
// says "now" for expiries and conditions.
type Table[C any] struct {
	Client C
	Name   string
	Clock  clock.Clock
}

// Open returns the handle on table name reached through c; clk is the
// real clock when nil (a backend without expiries passes nil).
func Open[C any](c C, name string, clk clock.Clock) Table[C] {
	return Table[C]{Client: c, Name: name, Clock: clock.Or(clk)}
}
