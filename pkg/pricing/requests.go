package pricing

import (
	"fmt"
	"slices"
	"strings"
)

// Services of a Request.
const (
	S3       = "s3"
	SQS      = "sqs"
	SNS      = "sns"
	DynamoDB = "dynamodb"
	// Postgres counts statements (Op Statements): each one a client
	// executes, BEGIN and COMMIT included.
	Postgres   = "postgres"
	Statements = "statements"
)

// Request is N requests of one operation of one service.
type Request struct {
	Service, Op string
	N           int
}

// String is "service Op".
func (r Request) String() string { return r.Service + " " + r.Op }

// TaskCase is every request one task of a type makes in one case, besides
// Workman's own receive and delete (batched across tasks: about 0.2 SQS
// requests a task, measured by make bench) and RunOutcome.
type TaskCase struct {
	Type, Case string
	Requests   []Request
	// Estimate marks the case a run's cost estimate counts for each task
	// of the type (RunEstimate).
	Estimate bool
}

// TaskRequests is the capacity model's request list per task type, in the
// steady state of a Workman (a store's bucket versioning is asked at most
// every five minutes, a bit-log month's partitions once; neither is
// listed). docs/CAPACITY.md's table is rendered from it (Markdown), and an
// end-to-end test counts each case at a proxy against it.
var TaskRequests = []TaskCase{
	{Type: "AUDIT", Case: "ADD_CONTENT in a duplicated space", Estimate: true, Requests: []Request{
		{S3, "HeadObject", 1}, {DynamoDB, "PutItem", 1}, {SQS, "SendMessageBatch", 1}, {Postgres, Statements, 1}}},
	{Type: "BIT", Case: "a healthy item below the part size (16 MiB)", Estimate: true, Requests: []Request{
		{S3, "GetObject", 1}, {DynamoDB, "Query", 1}, {Postgres, Statements, 2}}},
	{Type: "BIT_REPORT", Case: "a complete space of up to 1,000 items", Estimate: true, Requests: []Request{
		{S3, "ListObjectsV2", 1}, {S3, "PutObject", 2}, {Postgres, Statements, 5}}},
	{Type: "DUP", Case: "server-side, the copies differ", Requests: []Request{
		{S3, "HeadObject", 4}, {S3, "CopyObject", 1}, {SQS, "SendMessageBatch", 1}}},
	{Type: "DUP", Case: "server-side, the copies are equal", Estimate: true, Requests: []Request{
		{S3, "HeadObject", 2}}},
	{Type: "DUP", Case: "streamed, the copies differ (an item below the part size)", Requests: []Request{
		{S3, "HeadObject", 4}, {S3, "GetObject", 1}, {S3, "PutObject", 1}, {SQS, "SendMessageBatch", 1}}},
	{Type: "DUP", Case: "streamed, the copies are equal", Requests: []Request{
		{S3, "HeadObject", 2}}},
	{Type: "STORAGE_STATS", Case: "a space of up to 1,000 items", Estimate: true, Requests: []Request{
		{S3, "ListObjectsV2", 1}, {Postgres, Statements, 1}}},
}

// RunOutcome is what Workman adds to a task of a producer run: its outcome
// recorded in one transaction (BEGIN, the run, the task's last outcome,
// the outcome, the run's counts, COMMIT) and the run's status read.
var RunOutcome = []Request{{Postgres, Statements, 7}}

// SQS requests per task outside TaskRequests, as make bench measures
// them: the producer's enqueue (batches of ten) and Workman's receive and
// delete.
const (
	EnqueueSQSPerTask = 0.101
	WorkmanSQSPerTask = 0.201
)

// Markdown renders TaskRequests and RunOutcome as docs/CAPACITY.md's table.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| task | case | requests |\n|---|---|---|\n")
	row := func(typ, cas string, rs []Request) {
		parts := make([]string, len(rs))
		for i, r := range rs {
			parts[i] = fmt.Sprintf("%d %s", r.N, r)
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", typ, cas, strings.Join(parts, ", "))
	}
	for _, c := range TaskRequests {
		cas := c.Case
		if c.Estimate {
			cas += " (estimate)"
		}
		row(c.Type, cas, c.Requests)
	}
	row("any", "a task of a producer run (its outcome)", RunOutcome)
	return b.String()
}

// estimateCase returns the Estimate case of a task type.
func estimateCase(typ string) (TaskCase, bool) {
	i := slices.IndexFunc(TaskRequests, func(c TaskCase) bool { return c.Type == typ && c.Estimate })
	if i < 0 {
		return TaskCase{}, false
	}
	return TaskRequests[i], true
}

// EstimateRequests is the requests of a run's tasks, estimated from their
// attempts by task type: each attempt makes its type's Estimate case of
// TaskRequests and RunOutcome, and each task the SQS requests of its
// enqueue and of Workman (EnqueueSQSPerTask, WorkmanSQSPerTask, per
// attempt). A type without an Estimate case counts only those. Keys are
// Request.String ("s3 GetObject").
func EstimateRequests(attempts map[string]int64) map[string]float64 {
	out := map[string]float64{}
	for typ, n := range attempts {
		if n <= 0 {
			continue
		}
		reqs := slices.Clone(RunOutcome)
		if c, ok := estimateCase(typ); ok {
			reqs = append(reqs, c.Requests...)
		}
		for _, r := range reqs {
			out[r.String()] += float64(n) * float64(r.N)
		}
		out[SQS+" SendMessageBatch"] += float64(n) * EnqueueSQSPerTask
		out[SQS+" Workman"] += float64(n) * WorkmanSQSPerTask
	}
	return out
}

// RequestsEstimate is what a set of requests costs at a table's prices,
// USD: an estimate labelled with the table, never a bill.
type RequestsEstimate struct {
	Label      string   `json:"label"`
	Region     string   `json:"region"`
	TakenOn    string   `json:"pricesTakenOn"`
	Unverified []string `json:"unverifiedPrices,omitempty"`
	// Basis says how the requests were counted.
	Basis    string             `json:"basis"`
	Requests map[string]float64 `json:"requests"`
	// ByService is the cost per service; PostgreSQL is a fixed monthly
	// cost, not priced per statement (0).
	ByService map[string]float64 `json:"usdByService"`
	Total     float64            `json:"totalUSD"`
}

// price is the USD of one request "service Op".
func (t *Table) price(name string) float64 {
	svc, op, _ := strings.Cut(name, " ")
	switch svc {
	case S3:
		switch op {
		case "GetObject":
			return t.GetPer1000 / 1000
		case "HeadObject":
			return t.HeadPer1000 / 1000
		case "ListObjectsV2", "ListObjects", "ListObjectVersions":
			return t.ListPer1000 / 1000
		case "DeleteObject", "DeleteObjects":
			return 0
		}
		return t.PutPer1000 / 1000 // PUT, COPY, POST, UploadPart…
	case SQS:
		return t.SQSPerMillion / 1e6
	case SNS:
		return t.SNSPerMillion / 1e6
	case DynamoDB:
		switch op {
		case "GetItem", "Query", "Scan", "BatchGetItem":
			return t.DynamoReadPerMillion / 1e6
		}
		return t.DynamoWritePerMillion / 1e6
	}
	return 0
}

// RequestsCost prices reqs (Request.String → count).
func (t *Table) RequestsCost(reqs map[string]float64, basis string) RequestsEstimate {
	e := RequestsEstimate{Label: t.Label, Region: t.Region, TakenOn: t.TakenOn, Unverified: t.Unverified, Basis: basis,
		Requests: reqs, ByService: map[string]float64{}}
	for name, n := range reqs {
		svc, _, _ := strings.Cut(name, " ")
		usd := n * t.price(name)
		e.ByService[svc] += usd
		e.Total += usd
	}
	return e
}
