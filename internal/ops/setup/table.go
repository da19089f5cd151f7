package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Table is a DynamoDB table built from a CreateTableInput (see
// dynamoauditlog.CreateTableInput, dynamolease.CreateTableInput), optionally with TTL.
// An existing table must have the same key schema (a different key cannot
// be changed in place: that is an error); a missing global secondary index,
// provisioned billing where on-demand is wanted, or TTL off are updated.
type Table struct {
	Client DynamoDBAPI
	Create *dynamodb.CreateTableInput
	// TTL, when set, is enabled after the table is ACTIVE.
	TTL *dynamodb.UpdateTimeToLiveInput
	// Timeout bounds waiting for ACTIVE (default DefaultTableTimeout).
	Timeout time.Duration
}

// Kind implements Resource.
func (t *Table) Kind() string { return "table" }

// Name implements Resource.
func (t *Table) Name() string { return aws.ToString(t.Create.TableName) }

func (t *Table) describe(ctx context.Context) (*ddbtypes.TableDescription, error) {
	out, err := t.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: t.Create.TableName})
	if err != nil {
		var nf *ddbtypes.ResourceNotFoundException
		if errors.As(err, &nf) {
			return nil, nil
		}
		return nil, fmt.Errorf("describe table %s: %w", t.Name(), err)
	}
	return out.Table, nil
}

func keyString(ks []ddbtypes.KeySchemaElement) string {
	s := ""
	for _, k := range ks {
		s += fmt.Sprintf("%s(%s) ", aws.ToString(k.AttributeName), k.KeyType)
	}
	return s
}

// tableDiff lists what Apply must change on an existing table.
type tableDiff struct {
	onDemand   bool
	addIndexes []ddbtypes.GlobalSecondaryIndex
	enableTTL  bool
	reasons    []string
}

func (t *Table) diff(ctx context.Context, d *ddbtypes.TableDescription) (tableDiff, error) {
	var td tableDiff
	if keyString(d.KeySchema) != keyString(t.Create.KeySchema) {
		return td, fmt.Errorf("table %s has key %s, want %s: a key cannot be changed in place; use another table name or recreate it",
			t.Name(), keyString(d.KeySchema), keyString(t.Create.KeySchema))
	}
	if t.Create.BillingMode == ddbtypes.BillingModePayPerRequest &&
		(d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != ddbtypes.BillingModePayPerRequest) {
		td.onDemand = true
		td.reasons = append(td.reasons, "billing: provisioned → on-demand")
	}
	have := map[string]ddbtypes.GlobalSecondaryIndexDescription{}
	for _, g := range d.GlobalSecondaryIndexes {
		have[aws.ToString(g.IndexName)] = g
	}
	for _, g := range t.Create.GlobalSecondaryIndexes {
		h, ok := have[aws.ToString(g.IndexName)]
		if !ok {
			td.addIndexes = append(td.addIndexes, g)
			td.reasons = append(td.reasons, "add index "+aws.ToString(g.IndexName))
			continue
		}
		if keyString(h.KeySchema) != keyString(g.KeySchema) {
			return td, fmt.Errorf("table %s: index %s has key %s, want %s: delete the index and run setup again",
				t.Name(), aws.ToString(g.IndexName), keyString(h.KeySchema), keyString(g.KeySchema))
		}
	}
	if t.TTL != nil {
		out, err := t.Client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: t.Create.TableName})
		if err != nil {
			return td, fmt.Errorf("describe TTL of %s: %w", t.Name(), err)
		}
		want := aws.ToString(t.TTL.TimeToLiveSpecification.AttributeName)
		desc := out.TimeToLiveDescription
		status := ddbtypes.TimeToLiveStatusDisabled
		attr := ""
		if desc != nil {
			status, attr = desc.TimeToLiveStatus, aws.ToString(desc.AttributeName)
		}
		switch {
		case (status == ddbtypes.TimeToLiveStatusEnabled || status == ddbtypes.TimeToLiveStatusEnabling) && attr == want:
		case status == ddbtypes.TimeToLiveStatusEnabled || status == ddbtypes.TimeToLiveStatusEnabling:
			return td, fmt.Errorf("table %s has TTL on %q, want %q: disable it, then run setup again", t.Name(), attr, want)
		default:
			td.enableTTL = true
			td.reasons = append(td.reasons, "TTL on "+want+": off → on")
		}
	}
	return td, nil
}

// Plan implements Resource.
func (t *Table) Plan(ctx context.Context) (Change, error) {
	d, err := t.describe(ctx)
	if err != nil {
		return Change{}, err
	}
	if d == nil {
		return Change{Action: ActionCreate, Reasons: t.summary()}, nil
	}
	td, err := t.diff(ctx, d)
	if err != nil {
		return Change{}, err
	}
	if len(td.reasons) == 0 {
		return Change{Action: ActionNone}, nil
	}
	return Change{Action: ActionUpdate, Reasons: td.reasons}, nil
}

func (t *Table) summary() []string {
	s := []string{"key " + strings.TrimSpace(keyString(t.Create.KeySchema))}
	if t.Create.BillingMode == ddbtypes.BillingModePayPerRequest {
		s = append(s, "on-demand")
	}
	for _, g := range t.Create.GlobalSecondaryIndexes {
		s = append(s, "index "+aws.ToString(g.IndexName))
	}
	if t.TTL != nil {
		s = append(s, "TTL on "+aws.ToString(t.TTL.TimeToLiveSpecification.AttributeName))
	}
	return s
}

func (t *Table) waitActive(ctx context.Context) error {
	timeout := t.Timeout
	if timeout <= 0 {
		timeout = DefaultTableTimeout
	}
	w := dynamodb.NewTableExistsWaiter(t.Client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 10*time.Second
	})
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: t.Create.TableName}, timeout); err != nil {
		return fmt.Errorf("wait for table %s to be ACTIVE: %w", t.Name(), err)
	}
	return nil
}

// Apply implements Resource.
func (t *Table) Apply(ctx context.Context, c Change) (Result, error) {
	d, err := t.describe(ctx)
	if err != nil {
		return Result{}, err
	}
	if d == nil {
		_, err := t.Client.CreateTable(ctx, t.Create)
		var inUse *ddbtypes.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) { // in use: created concurrently
			return Result{}, fmt.Errorf("create table %s: %w", t.Name(), err)
		}
		if err := t.waitActive(ctx); err != nil {
			return Result{}, err
		}
		if t.TTL != nil {
			if _, err := t.Client.UpdateTimeToLive(ctx, t.TTL); err != nil {
				return Result{}, fmt.Errorf("enable TTL on %s: %w", t.Name(), err)
			}
		}
		return Result{Status: StatusCreated, Details: t.summary()}, nil
	}
	// An update needs the table ACTIVE (it may be CREATING or UPDATING
	// after a concurrent setup).
	if err := t.waitActive(ctx); err != nil {
		return Result{}, err
	}
	td, err := t.diff(ctx, d)
	if err != nil {
		return Result{}, err
	}
	if td.onDemand {
		if _, err := t.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: t.Create.TableName, BillingMode: ddbtypes.BillingModePayPerRequest}); err != nil {
			return Result{}, fmt.Errorf("switch %s to on-demand: %w", t.Name(), err)
		}
		if err := t.waitActive(ctx); err != nil {
			return Result{}, err
		}
	}
	for _, g := range td.addIndexes {
		// DynamoDB adds one index per UpdateTable call. The index then
		// backfills in the background; the table stays usable.
		if _, err := t.Client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
			TableName:            t.Create.TableName,
			AttributeDefinitions: t.Create.AttributeDefinitions,
			GlobalSecondaryIndexUpdates: []ddbtypes.GlobalSecondaryIndexUpdate{{Create: &ddbtypes.CreateGlobalSecondaryIndexAction{
				IndexName: g.IndexName, KeySchema: g.KeySchema, Projection: g.Projection,
			}}},
		}); err != nil {
			return Result{}, fmt.Errorf("add index %s to %s: %w", aws.ToString(g.IndexName), t.Name(), err)
		}
		if err := t.waitActive(ctx); err != nil {
			return Result{}, err
		}
	}
	if td.enableTTL {
		if _, err := t.Client.UpdateTimeToLive(ctx, t.TTL); err != nil {
			return Result{}, fmt.Errorf("enable TTL on %s: %w", t.Name(), err)
		}
	}
	if len(td.reasons) == 0 {
		return Result{Status: StatusExists}, nil
	}
	return Result{Status: StatusUpdated, Details: td.reasons}, nil
}
