// Package pricing estimates what Mill's fixity checks and producer runs
// cost, from a price table that is a setting: a JSON file (Load), or the embedded default of
// published us-east-1 list prices (Default), labelled with the date they
// were collected. Every figure it gives is an estimate from the table,
// never a bill: it counts the requests and bytes a check is known to
// cause, at the table's prices.
//
// The default table's figures and where they were read (collected on its
// takenOn date):
//
//   - GET and HEAD $0.0004 and LIST $0.005 per 1,000 requests (S3
//     Standard): https://c3x.dev/blog/s3-request-fees-explained, quoting
//     https://aws.amazon.com/s3/pricing/.
//   - Data transfer between S3 and EC2 in the same region $0:
//     https://aws.amazon.com/s3/faqs/ ("There is no Data Transfer charge
//     for data transferred between Amazon EC2 and Amazon S3 within the same
//     Region"). Out to the internet $0.09/GB (first 10 TB a month):
//     https://aws.amazon.com/s3/pricing/ (unverified: not read there).
//   - S3 Batch Operations $0.25 per job:
//     https://sysdesign-wiki.pages.dev/systems/s3-batch-operations/
//     (a flat $0.25 per job, from Yelp's 2025-09-26 engineering post);
//     $1.00 per million objects processed: https://aws.amazon.com/s3/pricing/
//     (unverified).
//   - Compute checksum, per GB processed: https://aws.amazon.com/s3/pricing/
//     (unverified: the figure was not found in a source that could be
//     read; set it from the pricing page before relying on at-rest costs).
//     The operation itself:
//     https://docs.aws.amazon.com/AmazonS3/latest/userguide/batch-ops-compute-checksums.html
//   - Restores, for comparison: Glacier Flexible Retrieval, Standard tier,
//     $0.01/GB and $0.05 per 1,000 requests:
//     https://repost.aws/knowledge-center/s3-manage-data-retrieval; Deep
//     Archive, Standard tier, $0.02/GB and $0.10 per 1,000 requests:
//     https://aws.amazon.com/s3/pricing/ (unverified).
//   - S3 PUT, COPY, POST and UploadPart $0.005 per 1,000 requests (S3
//     Standard), the same class and source as LIST.
//   - SQS standard $0.40 per million requests, SNS $0.50 per million
//     publishes, DynamoDB on demand $0.125 per million read and $0.625
//     per million write request units: https://aws.amazon.com/sqs/pricing/,
//     https://aws.amazon.com/sns/pricing/,
//     https://aws.amazon.com/dynamodb/pricing/on-demand/ (unverified: not
//     read there).
//
// Requests per task (requests.go): TaskRequests is the capacity model's
// list of every request one task makes, by type and case, which
// docs/CAPACITY.md renders (Markdown) and an end-to-end test counts at a
// proxy; EstimateRequests and Table.RequestsCost turn a run's attempts by
// task type into its estimated requests and dollars (pkg/runs' reports).
// Counter (counter.go) counts the requests a task really makes, by
// service and operation, filled by pkg/awsconfig's SDK middleware; a
// run's report prices those counts with RequestsCost too.
//
// A table names its unverified figures (Table.Unverified); every estimate
// carries that list, so a report says which of its numbers rest on them.
package pricing

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

//go:embed default.json
var defaultJSON []byte

// Table is a price table, USD.
type Table struct {
	// Label says what the figures are ("published list prices …").
	Label string `json:"label"`
	// Region the prices are of; TakenOn the date (YYYY-MM-DD) they were
	// collected.
	Region  string `json:"region"`
	TakenOn string `json:"takenOn"`
	// Requests, per 1,000.
	GetPer1000  float64 `json:"getPer1000"`
	HeadPer1000 float64 `json:"headPer1000"`
	ListPer1000 float64 `json:"listPer1000"`
	// Data transfer per GB: out to the internet, and between S3 and
	// compute in the same region (Mill's reads from EC2).
	TransferOutPerGB      float64 `json:"transferOutPerGB"`
	TransferInRegionPerGB float64 `json:"transferInRegionPerGB"`
	// S3 Batch Operations: per job, per million objects processed, and
	// the Compute checksum operation per GB processed.
	BatchJob               float64 `json:"batchJob"`
	BatchPerMillionObjects float64 `json:"batchPerMillionObjects"`
	ComputeChecksumPerGB   float64 `json:"computeChecksumPerGB"`
	// Restores (Standard tier), for comparison: per GB and per 1,000
	// restore requests.
	RestoreFlexiblePerGB      float64 `json:"restoreFlexiblePerGB"`
	RestoreFlexiblePer1000    float64 `json:"restoreFlexiblePer1000"`
	RestoreDeepArchivePerGB   float64 `json:"restoreDeepArchivePerGB"`
	RestoreDeepArchivePer1000 float64 `json:"restoreDeepArchivePer1000"`
	// Requests of the other services, and S3's writes (PUT, COPY, POST,
	// UploadPart; LIST is ListPer1000), priced per request kind by
	// Table.RequestsCost: S3 writes per 1,000, SQS and SNS requests per
	// million, DynamoDB on-demand read and write request units per
	// million (a request of an item under 4 KB, resp. 1 KB, is one).
	PutPer1000            float64 `json:"putPer1000"`
	SQSPerMillion         float64 `json:"sqsPerMillion"`
	SNSPerMillion         float64 `json:"snsPerMillion"`
	DynamoReadPerMillion  float64 `json:"dynamoReadPerMillion"`
	DynamoWritePerMillion float64 `json:"dynamoWritePerMillion"`
	// Unverified names the fields (by their JSON names) whose figures
	// were not confirmed from a source.
	Unverified []string `json:"unverified,omitempty"`
	// Providers prices the stores outside AWS by kind (providers.go);
	// optional.
	Providers map[storage.Kind]ProviderPrices `json:"providers,omitempty"`
}

// GB is the unit the prices are per: 2^30 bytes, as AWS bills.
const GB = 1 << 30

// MaxPrice bounds every figure: a price above it is a typing error.
const MaxPrice = 1000

var regionForm = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)

// Default returns the embedded default table (a fresh copy).
func Default() *Table {
	t, err := Parse(defaultJSON, "the default price table")
	if err != nil {
		panic(err) // the embedded file is part of the build and tested
	}
	return t
}

// Load reads a table from a JSON file.
func Load(path string) (*Table, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pricing: %w", err)
	}
	return Parse(b, path)
}

// Parse reads a table from JSON; name is the file's name for errors. Every
// field is required; unknown fields are refused; an error names the line
// and column.
func Parse(b []byte, name string) (*Table, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil { // also refuses data after the table
		return nil, fmt.Errorf("pricing: %s: %s", name, position(b, err))
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var t Table
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("pricing: %s: %s", name, position(b, err))
	}
	fields := t.fields()
	for _, f := range fields {
		if _, ok := raw[f.name]; !ok {
			return nil, fmt.Errorf("pricing: %s: %q is missing (every price must be given; 0 when free)", name, f.name)
		}
	}
	var errs []error
	for _, f := range fields {
		if v := *f.v; math.IsNaN(v) || v < 0 || v > MaxPrice {
			errs = append(errs, fmt.Errorf("%q is %v: want 0..%d", f.name, v, MaxPrice))
		}
	}
	if !regionForm.MatchString(t.Region) {
		errs = append(errs, fmt.Errorf("\"region\" %q: want an AWS region name", t.Region))
	}
	if d, err := time.Parse(time.DateOnly, t.TakenOn); err != nil || d.Year() < 2006 {
		errs = append(errs, fmt.Errorf("\"takenOn\" %q: want the date the prices were collected, YYYY-MM-DD", t.TakenOn))
	}
	if len(t.Label) > 300 {
		errs = append(errs, fmt.Errorf("\"label\" is %d bytes: want at most 300", len(t.Label)))
	}
	for _, u := range t.Unverified {
		if !slices.ContainsFunc(fields, func(f field) bool { return f.name == u }) {
			errs = append(errs, fmt.Errorf("\"unverified\" names %q, which is not a price", u))
		}
	}
	errs = append(errs, t.checkProviders())
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("pricing: %s: %w", name, err)
	}
	return &t, nil
}

type field struct {
	name string
	v    *float64
}

func (t *Table) fields() []field {
	return []field{
		{"getPer1000", &t.GetPer1000}, {"headPer1000", &t.HeadPer1000}, {"listPer1000", &t.ListPer1000},
		{"transferOutPerGB", &t.TransferOutPerGB}, {"transferInRegionPerGB", &t.TransferInRegionPerGB},
		{"batchJob", &t.BatchJob}, {"batchPerMillionObjects", &t.BatchPerMillionObjects}, {"computeChecksumPerGB", &t.ComputeChecksumPerGB},
		{"restoreFlexiblePerGB", &t.RestoreFlexiblePerGB}, {"restoreFlexiblePer1000", &t.RestoreFlexiblePer1000},
		{"restoreDeepArchivePerGB", &t.RestoreDeepArchivePerGB}, {"restoreDeepArchivePer1000", &t.RestoreDeepArchivePer1000},
		{"putPer1000", &t.PutPer1000}, {"sqsPerMillion", &t.SQSPerMillion}, {"snsPerMillion", &t.SNSPerMillion},
		{"dynamoReadPerMillion", &t.DynamoReadPerMillion}, {"dynamoWritePerMillion", &t.DynamoWritePerMillion},
	}
}

// position adds the line and column of a JSON syntax or type error.
func position(b []byte, err error) string {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // the offset is past the offending byte
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 {
		return err.Error()
	}
	line, col := 1, 1
	for _, c := range b[:min(int(off), len(b))] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("line %d, column %d: %v", line, col, err)
}
