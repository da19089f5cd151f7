package runs

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	// Cost is the run's estimated requests and their price (Estimate);
	// nil when unknown.
	Cost *pricing.RequestsEstimate `json:"cost,omitempty"`
}

// CostBasis says how a report's cost is counted.
const CostBasis = "estimate: each attempt of a task counts the requests docs/CAPACITY.md lists for its type " +
	"(pkg/pricing.TaskRequests, its estimate case) and its run outcome, plus the producer's and Workman's SQS requests per task"

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
	if c := r.Cost; c != nil {
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
	if r.Cost != nil {
		body += fmt.Sprintf("Estimated cost: $%.4f (prices of %s).\n", r.Cost.Total, r.Cost.TakenOn)
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
