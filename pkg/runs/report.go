package runs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/notify"
	"github.com/millfleet/mill/pkg/pricing"
	"github.com/millfleet/mill/pkg/task"
)

// Report is a run's completion report (JSON; Failures also as CSV).
type Report struct {
	Producer  string    `json:"producer"`
	RunID     string    `json:"run_id"`
	Scope     string    `json:"scope,omitempty"`
	Started   time.Time `json:"started"`
	Listed    time.Time `json:"listed"`
	Completed time.Time `json:"completed"`
	Enqueued  int64     `json:"enqueued"`
	Done      int64     `json:"done"`
	Dead      int64     `json:"dead_lettered"`
	// Rate is the settled tasks per second from the first outcome to
	// the last.
	Rate float64 `json:"tasks_per_second"`
	// Failures are the dead-lettered tasks with their reasons (at most
	// Recorder.MaxFailures; Truncated says some were left out).
	Failures  []Failure `json:"failures"`
	Truncated bool      `json:"failures_truncated,omitempty"`
	// Cost is the run's counted requests and their price (CountedCost);
	// Estimate, for comparison, what the documented request lists make
	// of its attempts (Estimate). nil when unknown.
	Cost     *pricing.RequestsEstimate `json:"cost,omitempty"`
	Estimate *pricing.RequestsEstimate `json:"estimate,omitempty"`
}

// CostBasis says how a report's estimate is counted.
const CostBasis = "estimate: each attempt of a task counts the requests docs/CAPACITY.md lists for its type " +
	"(pkg/pricing.TaskRequests, its estimate case) and its run outcome, plus the producer's and Workman's SQS requests per task"

// CountedBasis says how a report's cost is counted.
const CountedBasis = "counted: every AWS request the run's task attempts made, as Workman counted them in the SDK " +
	"(each answered HTTP attempt, retries included), by service and operation; plus each attempt's share of the producer's " +
	"enqueue and of Workman's receive and delete (the \"(share)\" lines, at the per-task rates make bench measures). " +
	"Not counted: stores outside AWS (fs, GCS, Azure), attempts released unfinished or killed, " +
	"Workman's sends of retries and dead letters, PostgreSQL"

// Share lines of a counted cost: the producer's enqueue and Workman's
// receive and delete, per attempt (pricing.EnqueueSQSPerTask,
// pricing.WorkmanSQSPerTask).
const (
	EnqueueShare = pricing.SQS + " SendMessageBatch (share)"
	WorkmanShare = pricing.SQS + " Workman (share)"
)

// CountedCost is the cost of a run whose tasks' attempts (by type;
// Store.Attempts) made requests (Store.Requests), at prices (nil:
// pricing.Default()).
func CountedCost(requests map[string]int64, attempts map[task.Type]int64, prices *pricing.Table) *pricing.RequestsEstimate {
	if prices == nil {
		prices = pricing.Default()
	}
	reqs := make(map[string]float64, len(requests)+2)
	for k, n := range requests {
		reqs[k] += float64(n)
	}
	var n int64
	for _, a := range attempts {
		n += a
	}
	if n > 0 {
		reqs[EnqueueShare] = float64(n) * pricing.EnqueueSQSPerTask
		reqs[WorkmanShare] = float64(n) * pricing.WorkmanSQSPerTask
	}
	e := prices.RequestsCost(reqs, CountedBasis)
	return &e
}

// Estimate is the cost of a run whose tasks made attempts (by type;
// Store.Attempts), at prices (nil: pricing.Default()).
func Estimate(attempts map[task.Type]int64, prices *pricing.Table) *pricing.RequestsEstimate {
	if prices == nil {
		prices = pricing.Default()
	}
	by := map[string]int64{}
	for t, n := range attempts {
		by[string(t)] += n
	}
	e := prices.RequestsCost(pricing.EstimateRequests(by), CostBasis)
	return &e
}

// Failure is one dead-lettered task of a report.
type Failure struct {
	Type     string    `json:"task_type"`
	Item     string    `json:"item"`
	Reason   string    `json:"reason"`
	Error    string    `json:"error"`
	Attempts int       `json:"attempts"`
	At       time.Time `json:"at"`
}

// NewReport builds the report of a finished run from its status and
// failures (Store.Failures), completed at now.
func NewReport(st Status, fails []Outcome, now time.Time) Report {
	r := Report{Producer: st.Producer, RunID: st.ID, Scope: st.Scope, Started: st.Started, Listed: st.Listed,
		Completed: now, Enqueued: st.Enqueued, Done: st.Done, Dead: st.Dead, Rate: st.Rate(now), Failures: []Failure{}}
	for _, o := range fails {
		if o.State != StateDead {
			continue // a finished run has none retrying; a stale row
		}
		r.Failures = append(r.Failures, Failure{Type: string(o.Type), Item: o.Item, Reason: o.Reason,
			Error: o.Error, Attempts: o.Attempts, At: o.At})
	}
	r.Truncated = int64(len(r.Failures)) < st.Dead
	return r
}

// Key is where the report goes in the reports store, without extension.
func (r Report) Key() string { return "runs/" + r.Producer + "/" + r.RunID }

// JSON returns the report as indented JSON.
func (r Report) JSON() ([]byte, error) {
	return json.MarshalIndent(r, "", "  ")
}

// CSV returns the counts as comment-free header rows, then one row per
// failure: task_type,item,reason,error,attempts,at.
func (r Report) CSV() ([]byte, error) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	rows := [][]string{
		{"producer", "run_id", "enqueued", "done", "dead_lettered", "started", "completed"},
		{r.Producer, r.RunID, strconv.FormatInt(r.Enqueued, 10), strconv.FormatInt(r.Done, 10),
			strconv.FormatInt(r.Dead, 10), r.Started.Format(time.RFC3339), r.Completed.Format(time.RFC3339)},
		{},
		{"task_type", "item", "reason", "error", "attempts", "at"},
	}
	for _, f := range r.Failures {
		rows = append(rows, []string{f.Type, csvSafe(f.Item), f.Reason, csvSafe(f.Error), strconv.Itoa(f.Attempts), f.At.Format(time.RFC3339)})
	}
	for _, c := range []*pricing.RequestsEstimate{r.Cost, r.Estimate} {
		if c == nil {
			continue
		}
		names := slices.Sorted(maps.Keys(c.Requests))
		rows = append(rows, []string{}, []string{"cost_usd", "prices_taken_on", "basis"},
			[]string{strconv.FormatFloat(c.Total, 'f', 6, 64), c.TakenOn, c.Basis}, []string{"request", "count"})
		for _, n := range names {
			rows = append(rows, []string{n, strconv.FormatFloat(c.Requests[n], 'f', -1, 64)})
		}
	}
	if err := w.WriteAll(rows); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// csvSafe keeps a spreadsheet from reading a cell as a formula (an item
// name or error text is not Mill's to trust).
func csvSafe(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@') {
		return "'" + s
	}
	return s
}

// Store writes the report as Key().json and Key().csv and returns the JSON
// file's location.
func (r Report) Store(ctx context.Context, rs Reports) (string, error) {
	js, err := r.JSON()
	if err != nil {
		return "", err
	}
	cs, err := r.CSV()
	if err != nil {
		return "", err
	}
	if _, err := rs.Put(ctx, r.Key()+".csv", bytes.NewReader(cs), int64(len(cs))); err != nil {
		return "", err
	}
	return rs.Put(ctx, r.Key()+".json", bytes.NewReader(js), int64(len(js)))
}

// Event is the notification of the completed report at loc.
func (r Report) Event(loc string) notify.Event {
	result := "SUCCESS"
	if r.Dead > 0 {
		result = "FAILURE"
	}
	body := fmt.Sprintf("%s run %s completed: %d tasks queued, %d done, %d dead-lettered.\n", r.Producer, r.RunID, r.Enqueued, r.Done, r.Dead)
	if c := r.Cost; c != nil {
		body += fmt.Sprintf("Cost: $%.4f for %s requests counted (prices of %s).\n", c.Total, CountSummary(c.Requests), c.TakenOn)
	}
	if r.Estimate != nil {
		body += fmt.Sprintf("Estimated cost from the documented requests per task: $%.4f.\n", r.Estimate.Total)
	}
	if loc != "" {
		body += "Report: " + loc + "\n"
	}
	return notify.Event{
		Type:    notify.EventRunReport,
		Subject: fmt.Sprintf("Mill: %s run %s completed, %d dead-lettered", r.Producer, r.RunID, r.Dead),
		Body:    body, Time: r.Completed,
		Attributes: map[string]string{notify.AttrProducer: r.Producer, notify.AttrRunID: r.RunID, notify.AttrResult: result},
	}
}

// CountSummary is counted requests by service, largest first, as "120
// (s3 100, sqs 20)": the share lines are left out.
func CountSummary(reqs map[string]float64) string {
	by := map[string]float64{}
	var total float64
	for k, n := range reqs {
		if strings.HasSuffix(k, "(share)") {
			continue
		}
		svc, _, _ := strings.Cut(k, " ")
		by[svc] += n
		total += n
	}
	svcs := slices.SortedFunc(maps.Keys(by), func(a, b string) int {
		return cmp.Or(cmp.Compare(by[b], by[a]), strings.Compare(a, b))
	})
	parts := make([]string, len(svcs))
	for i, s := range svcs {
		parts[i] = fmt.Sprintf("%s %.0f", s, by[s])
	}
	if len(parts) == 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}
