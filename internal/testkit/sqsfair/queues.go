package sqsfair

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/queue/memqueue"
)

// fqueue is one standard queue, its messages kept by a memqueue.Queue.
type fqueue struct {
	name, url, arn string
	mq             *memqueue.Queue
	attrs          map[string]string // as created (settable attributes)
	created        time.Time
	maxSize        int           // MaximumMessageSize
	delay          time.Duration // DelaySeconds
	wait           time.Duration // ReceiveMessageWaitTimeSeconds
	lastPurge      time.Time
}

var queueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// settable are the CreateQueue attributes the stand-in keeps, with their
// defaults and ranges from the API reference; SqsManagedSseEnabled is kept
// as given (there is nothing to encrypt in memory).
var settable = map[string]struct {
	def      string
	min, max int
}{
	"DelaySeconds":                  {"0", 0, 900},
	"MaximumMessageSize":            {"262144", 1024, 1 << 20},
	"MessageRetentionPeriod":        {"345600", 60, 1209600},
	"ReceiveMessageWaitTimeSeconds": {"0", 0, 20},
	"VisibilityTimeout":             {"30", 0, 43200},
}

func (s *Server) createQueue(ctx context.Context, body []byte) (any, error) {
	var in struct {
		QueueName  *string
		Attributes map[string]string
		// tags are accepted and not kept
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.QueueName == nil {
		return nil, errMissing("QueueName")
	}
	name := *in.QueueName
	if !queueName.MatchString(name) {
		return nil, errInvalid("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	attrs := map[string]string{}
	for k, d := range settable {
		attrs[k] = d.def
	}
	attrs["SqsManagedSseEnabled"] = "true"
	for k, v := range in.Attributes {
		switch d, ok := settable[k]; {
		case ok:
			n, err := strconv.Atoi(v)
			if err != nil || n < d.min || n > d.max {
				return nil, errShape("InvalidAttributeValue", "InvalidAttributeValue", "Invalid value for the parameter %s.", k)
			}
			attrs[k] = strconv.Itoa(n)
		case k == "SqsManagedSseEnabled":
			if v != "true" && v != "false" {
				return nil, errShape("InvalidAttributeValue", "InvalidAttributeValue", "Invalid value for the parameter %s.", k)
			}
			attrs[k] = v
		case k == "RedrivePolicy":
			attrs[k] = v
		default:
			return nil, errShape("InvalidAttributeName", "InvalidAttributeName", "Unknown Attribute %.80s.", k)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[name]; ok {
		if !maps.Equal(q.attrs, attrs) {
			return nil, errShape("QueueNameExists", "QueueAlreadyExists", "A queue already exists with the same name and a different value for attribute(s)")
		}
		return map[string]string{"QueueUrl": q.url}, nil
	}
	cfg := memqueue.Config{Fair: s.o.Fair, MaxBodyBytes: 4 << 20}
	if rp, ok := attrs["RedrivePolicy"]; ok {
		dlq, max, err := s.redriveLocked(rp)
		if err != nil {
			return nil, err
		}
		cfg.DeadLetter, cfg.MaxReceiveCount = dlq, max
	}
	vt, _ := strconv.Atoi(attrs["VisibilityTimeout"])
	// memqueue reads 0 as its default; SQS's 0 is "visible again at once".
	cfg.VisibilityTimeout = max(time.Duration(vt)*time.Second, time.Nanosecond)
	size, _ := strconv.Atoi(attrs["MaximumMessageSize"])
	delay, _ := strconv.Atoi(attrs["DelaySeconds"])
	wait, _ := strconv.Atoi(attrs["ReceiveMessageWaitTimeSeconds"])
	q := &fqueue{
		name: name, url: s.url + "/" + s.o.Account + "/" + name,
		arn:   "arn:aws:sqs:" + s.o.Region + ":" + s.o.Account + ":" + name,
		mq:    memqueue.New(name, cfg),
		attrs: attrs, created: time.Now(), maxSize: size,
		delay: time.Duration(delay) * time.Second, wait: time.Duration(wait) * time.Second,
	}
	s.queues[name] = q
	return map[string]string{"QueueUrl": q.url}, nil
}

// redriveLocked resolves a RedrivePolicy: its dead-letter queue must be a
// queue of this server, its maxReceiveCount 1..1000.
func (s *Server) redriveLocked(policy string) (*memqueue.Queue, int, error) {
	var rp struct {
		Arn   string          `json:"deadLetterTargetArn"`
		Count json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(policy), &rp); err != nil {
		return nil, 0, errShape("InvalidAttributeValue", "InvalidAttributeValue", "Invalid value for the parameter RedrivePolicy. Reason: Redrive policy is not a valid JSON map.")
	}
	n, err := strconv.Atoi(strings.Trim(string(rp.Count), `"`))
	if err != nil || n < 1 || n > 1000 {
		return nil, 0, errShape("InvalidAttributeValue", "InvalidAttributeValue", "Value %.40s for parameter RedrivePolicy is invalid. Reason: Invalid value for maxReceiveCount: must be an integer from 1 to 1000.", rp.Count)
	}
	for _, q := range s.queues {
		if q.arn == rp.Arn {
			return q.mq, n, nil
		}
	}
	return nil, 0, errShape("InvalidAttributeValue", "InvalidAttributeValue", "Value %.120s for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist.", rp.Arn)
}

func (s *Server) getQueueURL(ctx context.Context, body []byte) (any, error) {
	var in struct{ QueueName, QueueOwnerAWSAccountId *string }
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.QueueName == nil {
		return nil, errMissing("QueueName")
	}
	if in.QueueOwnerAWSAccountId != nil && *in.QueueOwnerAWSAccountId != s.o.Account {
		return nil, errQueueMissing()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[*in.QueueName]
	if !ok {
		return nil, errQueueMissing()
	}
	return map[string]string{"QueueUrl": q.url}, nil
}

// queueOf resolves a request's QueueUrl: any host (a proxy may stand in
// front), the path /<account>/<name> of an existing queue.
func (s *Server) queueOf(raw *string) (*fqueue, error) {
	if raw == nil {
		return nil, errMissing("QueueUrl")
	}
	u, err := url.Parse(*raw)
	if err != nil {
		return nil, errQueueMissing()
	}
	account, name, ok := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !ok || account != s.o.Account {
		return nil, errQueueMissing()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[name]
	if !ok {
		return nil, errQueueMissing()
	}
	return q, nil
}

// computed are the attributes GetQueueAttributes reports beyond the
// settable ones.
var computed = []string{"QueueArn", "CreatedTimestamp", "LastModifiedTimestamp", "RedrivePolicy", "SqsManagedSseEnabled",
	"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"}

func (s *Server) getQueueAttributes(ctx context.Context, body []byte) (any, error) {
	var in struct {
		QueueUrl       *string
		AttributeNames []string
	}
	q, err := s.request(body, &in, &in.QueueUrl)
	if err != nil {
		return nil, err
	}
	names := in.AttributeNames
	if slices.Contains(names, "All") {
		names = append(slices.Collect(maps.Keys(settable)), computed...)
	}
	d, err := q.mq.Depth(context.Background())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, n := range names {
		switch n {
		case "QueueArn":
			out[n] = q.arn
		case "CreatedTimestamp", "LastModifiedTimestamp":
			out[n] = strconv.FormatInt(q.created.Unix(), 10)
		case "ApproximateNumberOfMessages":
			out[n] = strconv.FormatInt(d.Visible, 10)
		case "ApproximateNumberOfMessagesNotVisible":
			out[n] = strconv.FormatInt(d.InFlight, 10)
		case "ApproximateNumberOfMessagesDelayed":
			out[n] = strconv.FormatInt(d.Delayed, 10)
		case "RedrivePolicy", "SqsManagedSseEnabled":
			if v, ok := q.attrs[n]; ok {
				out[n] = v
			}
		default:
			if _, ok := settable[n]; !ok {
				return nil, errShape("InvalidAttributeName", "InvalidAttributeName", "Unknown Attribute %.80s.", n)
			}
			out[n] = q.attrs[n]
		}
	}
	if len(out) == 0 {
		return struct{}{}, nil
	}
	return map[string]any{"Attributes": out}, nil
}

func (s *Server) listQueues(ctx context.Context, body []byte) (any, error) {
	var in struct {
		QueueNamePrefix *string
		MaxResults      *int
		NextToken       *string
	}
	if err := decode(body, &in); err != nil {
		return nil, err
	}
	if in.NextToken != nil {
		return nil, errInvalid("Invalid or expired next token.")
	}
	if in.MaxResults != nil && (*in.MaxResults < 1 || *in.MaxResults > 1000) {
		return nil, errInvalid("Value %d for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.", *in.MaxResults)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var urls []string
	for name, q := range s.queues {
		if in.QueueNamePrefix == nil || strings.HasPrefix(name, *in.QueueNamePrefix) {
			urls = append(urls, q.url)
		}
	}
	slices.Sort(urls)
	if len(urls) > 1000 {
		urls = urls[:1000]
	}
	if len(urls) == 0 {
		return struct{}{}, nil
	}
	return map[string]any{"QueueUrls": urls}, nil
}

// queueIn is the queue a request of only a QueueUrl names.
func (s *Server) queueIn(body []byte) (*fqueue, error) {
	var in struct{ QueueUrl *string }
	return s.request(body, &in, &in.QueueUrl)
}

// request decodes body into in and resolves the queue its QueueUrl (at
// queueURL, a field of in) names.
func (s *Server) request(body []byte, in any, queueURL **string) (*fqueue, error) {
	if err := decode(body, in); err != nil {
		return nil, err
	}
	return s.queueOf(*queueURL)
}

func (s *Server) deleteQueue(ctx context.Context, body []byte) (any, error) {
	q, err := s.queueIn(body)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	delete(s.queues, q.name)
	s.mu.Unlock()
	return struct{}{}, nil
}

// purgeQueue deletes every message at once; a second purge within 60 s
// is PurgeQueueInProgress, as on SQS.
func (s *Server) purgeQueue(ctx context.Context, body []byte) (any, error) {
	q, err := s.queueIn(body)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if !q.lastPurge.IsZero() && time.Since(q.lastPurge) < time.Minute {
		s.mu.Unlock()
		return nil, errShape("PurgeQueueInProgress", "AWS.SimpleQueueService.PurgeQueueInProgress",
			"Only one PurgeQueue operation on %s is allowed every 60 seconds.", q.name)
	}
	q.lastPurge = time.Now()
	s.mu.Unlock()
	if err := q.mq.Purge(context.Background()); err != nil {
		return nil, err
	}
	return struct{}{}, nil
}
