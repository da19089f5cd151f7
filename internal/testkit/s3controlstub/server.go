package s3controlstub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// DefaultAccount is the account moto's STS answers for.
const DefaultAccount = "123456789012"

// Options configure a Server.
type Options struct {
	// Account the jobs belong to (DefaultAccount when empty); requests
	// for another account are refused (AccessDenied).
	Account string
	// Region in the job ARNs ("us-east-1" when empty).
	Region string
	// Hold keeps every job Active, before its first task, until Release.
	Hold bool
}

// Server is the stand-in. Start it with Start; Close stops it.
type Server struct {
	s3 *s3.Client
	o  Options

	ln   net.Listener
	http *http.Server

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	jobs   map[string]*job
	order  []string          // job IDs by creation
	tokens map[string]string // ClientRequestToken → job ID
	// changed is closed, and replaced, at every status change.
	changed chan struct{}
}

// New returns a stand-in that reads manifests and objects from, and writes
// reports to, the emulator s3c reaches.
func New(s3c *s3.Client, o Options) *Server {
	if o.Account == "" {
		o.Account = DefaultAccount
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{s3: s3c, o: o, ctx: ctx, cancel: cancel, jobs: map[string]*job{}, tokens: map[string]string{}, changed: make(chan struct{})}
}

// Start listens on 127.0.0.1 (a free port) and serves.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.ln = ln
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return nil
}

// URL is the endpoint to give the S3 Control client (BaseEndpoint, or
// AWS_ENDPOINT_URL_S3_CONTROL).
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops serving and every job still running, and waits for them.
func (s *Server) Close() {
	if s.http != nil {
		_ = s.http.Close()
	}
	s.cancel()
	s.wg.Wait()
}

// Account is the account the jobs belong to.
func (s *Server) Account() string { return s.o.Account }

var (
	jobPath    = regexp.MustCompile(`^/v20180820/jobs/([A-Za-z0-9_-]{1,64})$`)
	statusPath = regexp.MustCompile(`^/v20180820/jobs/([A-Za-z0-9_-]{1,64})/status$`)
	tokenRE    = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
)

const maxBody = 1 << 20

// ServeHTTP routes the S3 Control job operations.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") == "" {
		s.fail(w, http.StatusForbidden, "AccessDenied", "the request is not signed")
		return
	}
	if a := r.Header.Get("x-amz-account-id"); a != s.o.Account {
		s.fail(w, http.StatusForbidden, "AccessDenied", fmt.Sprintf("x-amz-account-id %q: this stand-in serves account %s", a, s.o.Account))
		return
	}
	p := r.URL.Path
	switch {
	case p == "/v20180820/jobs" && r.Method == http.MethodPost:
		s.createJob(w, r)
	case p == "/v20180820/jobs" && r.Method == http.MethodGet:
		s.listJobs(w, r)
	case jobPath.MatchString(p) && r.Method == http.MethodGet:
		s.describeJob(w, jobPath.FindStringSubmatch(p)[1])
	case statusPath.MatchString(p) && r.Method == http.MethodPost:
		s.updateJobStatus(w, r, statusPath.FindStringSubmatch(p)[1])
	default:
		s.fail(w, http.StatusNotFound, "NotImplemented", fmt.Sprintf("%s %s is not an operation of this stand-in", r.Method, p))
	}
}

func (s *Server) write(w http.ResponseWriter, status int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("x-amz-request-id", newID()[:16])
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_, _ = w.Write(b)
}

func (s *Server) fail(w http.ResponseWriter, status int, code, msg string) {
	typ := "Sender"
	if status >= 500 {
		typ = "Receiver"
	}
	s.write(w, status, errorResponse{Xmlns: xmlns, Error: errorXML{Type: typ, Code: code, Message: msg}, RequestID: newID()[:16]})
}

// newID returns a random job ID in the form S3 uses (a UUID).
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func (s *Server) createJob(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		s.fail(w, http.StatusBadRequest, "BadRequestException", "the request body is unreadable or over 1 MiB")
		return
	}
	var req createJobRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		s.fail(w, http.StatusBadRequest, "MalformedXML", "CreateJobRequest: "+err.Error())
		return
	}
	if err := check(&req); err != nil {
		s.fail(w, http.StatusBadRequest, "BadRequestException", err.Error())
		return
	}
	canon, _ := xml.Marshal(req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.tokens[req.ClientRequestToken]; ok {
		if s.jobs[id].canon != string(canon) {
			s.fail(w, http.StatusConflict, "IdempotencyException", "ClientRequestToken "+req.ClientRequestToken+" was used for another request")
			return
		}
		s.write(w, http.StatusOK, createJobResult{Xmlns: xmlns, JobID: id})
		return
	}
	j := &job{
		id: newID(), req: req, canon: string(canon), status: "New", created: time.Now(),
		done: make(chan struct{}), wake: make(chan struct{}, 1), hold: s.o.Hold,
	}
	s.jobs[j.id] = j
	s.order = append(s.order, j.id)
	s.tokens[req.ClientRequestToken] = j.id
	s.wg.Add(1)
	go s.run(j)
	s.write(w, http.StatusOK, createJobResult{Xmlns: xmlns, JobID: j.id})
}

// check validates a CreateJob request as the API reference constrains it.
func check(r *createJobRequest) error {
	switch {
	case !tokenRE.MatchString(r.ClientRequestToken):
		return errors.New("field ClientRequestToken: 1 to 64 characters required")
	case r.Priority == nil || *r.Priority < 0:
		return errors.New("field Priority: a number from 0 to 2147483647 is required")
	case r.RoleArn == "" || !strings.HasPrefix(r.RoleArn, "arn:"):
		return errors.New("field RoleArn: an IAM role ARN is required")
	case len(r.Description) > 256:
		return errors.New("field Description: at most 256 characters")
	}
	if r.ManifestGenerator != nil {
		return errors.New("field ManifestGenerator: this stand-in reads CSV manifests only")
	}
	if r.Manifest == nil || r.Manifest.Spec.Format != "S3BatchOperations_CSV_20180820" || r.Manifest.Location.ObjectArn == "" || r.Manifest.Location.ETag == "" {
		return errors.New("field Manifest: an S3BatchOperations_CSV_20180820 manifest with an ObjectArn and an ETag is required")
	}
	if f := strings.Join(r.Manifest.Spec.Fields, ","); f != "Bucket,Key" && f != "Bucket,Key,VersionId" {
		return fmt.Errorf("field Manifest Fields %q: Bucket,Key or Bucket,Key,VersionId", f)
	}
	if r.Report == nil || (r.Report.Enabled && (r.Report.Format != "Report_CSV_20180820" || r.Report.Bucket == "")) {
		return errors.New("field Report: required; an enabled report needs Format Report_CSV_20180820 and a Bucket")
	}
	if r.Report.Enabled && r.Report.ReportScope != "AllTasks" && r.Report.ReportScope != "FailedTasksOnly" {
		return fmt.Errorf("field Report ReportScope %q: AllTasks or FailedTasksOnly", r.Report.ReportScope)
	}
	op := r.Operation.S3ComputeObjectChecksum
	if len(r.Operation.Others) > 0 || op == nil {
		return errors.New("field Operation: this stand-in implements S3ComputeObjectChecksum only")
	}
	if op.ChecksumAlgorithm != "MD5" && op.ChecksumAlgorithm != "CRC64NVME" {
		return fmt.Errorf("field ChecksumAlgorithm %q: this stand-in computes MD5 and CRC64NVME", op.ChecksumAlgorithm)
	}
	if op.ChecksumType != "FULL_OBJECT" {
		return fmt.Errorf("field ChecksumType %q: this stand-in computes FULL_OBJECT", op.ChecksumType)
	}
	return nil
}

func (s *Server) describeJob(w http.ResponseWriter, id string) {
	s.mu.Lock()
	j, ok := s.jobs[id]
	var d jobDescriptor
	if ok {
		d = s.descriptor(j)
	}
	s.mu.Unlock()
	if !ok {
		s.fail(w, http.StatusNotFound, "NotFoundException", "no job "+id)
		return
	}
	s.write(w, http.StatusOK, describeJobResult{Xmlns: xmlns, Job: d})
}

// descriptor describes j; s.mu is held.
func (s *Server) descriptor(j *job) jobDescriptor {
	d := jobDescriptor{
		JobID: j.id, Description: j.req.Description, Status: j.status,
		JobArn:   fmt.Sprintf("arn:aws:s3:%s:%s:job/%s", s.o.Region, s.o.Account, j.id),
		Manifest: *j.req.Manifest, Operation: operationXML{S3ComputeObjectChecksum: j.req.Operation.S3ComputeObjectChecksum},
		Priority: *j.req.Priority, ProgressSummary: j.progress(), StatusUpdateReason: j.reason,
		FailureReasons: j.failures, Report: *j.req.Report, CreationTime: stamp(j.created),
		TerminationDate: stamp(j.terminated), RoleArn: j.req.RoleArn,
		ConfirmationRequired: j.req.ConfirmationRequired != nil && *j.req.ConfirmationRequired,
	}
	if !j.suspended.IsZero() {
		d.SuspendedDate, d.SuspendedCause = stamp(j.suspended), "AwaitingConfirmation"
	}
	return d
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	want := map[string]bool{}
	for _, st := range q["jobStatuses"] {
		if !knownStatus[st] {
			s.fail(w, http.StatusBadRequest, "InvalidRequest", "jobStatuses: unknown status "+st)
			return
		}
		want[st] = true
	}
	max := 1000
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1000 {
			s.fail(w, http.StatusBadRequest, "InvalidRequest", "maxResults: 0 to 1000")
			return
		}
		if n > 0 {
			max = n
		}
	}
	start := 0
	if v := q.Get("nextToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			s.fail(w, http.StatusBadRequest, "InvalidNextTokenException", "nextToken "+v)
			return
		}
		start = n
	}
	s.mu.Lock()
	var out listJobsResult
	out.Xmlns = xmlns
	ids := append([]string(nil), s.order...)
	sort.SliceStable(ids, func(a, b int) bool { return s.jobs[ids[a]].created.After(s.jobs[ids[b]].created) })
	for i := start; i < len(ids); i++ {
		j := s.jobs[ids[i]]
		if len(want) > 0 && !want[j.status] {
			continue
		}
		if len(out.Jobs) == max {
			out.NextToken = strconv.Itoa(i)
			break
		}
		out.Jobs = append(out.Jobs, jobListDescriptor{
			JobID: j.id, Description: j.req.Description, Operation: "S3ComputeObjectChecksum",
			Priority: *j.req.Priority, Status: j.status, CreationTime: stamp(j.created),
			TerminationDate: stamp(j.terminated), ProgressSummary: j.progress(),
		})
	}
	s.mu.Unlock()
	s.write(w, http.StatusOK, out)
}

var knownStatus = map[string]bool{
	"Active": true, "Cancelled": true, "Cancelling": true, "Complete": true, "Completing": true, "Failed": true,
	"Failing": true, "New": true, "Paused": true, "Pausing": true, "Preparing": true, "Ready": true, "Suspended": true,
}

func (s *Server) updateJobStatus(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	want, reason := q.Get("requestedJobStatus"), q.Get("statusUpdateReason")
	if want != "Cancelled" && want != "Ready" {
		s.fail(w, http.StatusBadRequest, "BadRequestException", fmt.Sprintf("requestedJobStatus %q: Cancelled or Ready", want))
		return
	}
	if len(reason) > 256 {
		s.fail(w, http.StatusBadRequest, "BadRequestException", "statusUpdateReason: at most 256 characters")
		return
	}
	s.mu.Lock()
	j, ok := s.jobs[id]
	if !ok {
		s.mu.Unlock()
		s.fail(w, http.StatusNotFound, "NotFoundException", "no job "+id)
		return
	}
	switch {
	case want == "Cancelled" && !done(j.status) && j.status != "Cancelling":
		j.cancelled = true
		j.status = "Cancelling"
		j.reason = reason
		j.poke()
		s.notify()
	case want == "Ready" && j.status == "Suspended":
		j.confirmed = true
		j.status = "Ready"
		j.poke()
		s.notify()
	default:
		st := j.status
		s.mu.Unlock()
		s.fail(w, http.StatusConflict, "JobStatusException", fmt.Sprintf("job %s is %s: it cannot become %s", id, st, want))
		return
	}
	out := updateJobStatusResult{Xmlns: xmlns, JobID: j.id, Status: j.status, StatusUpdateReason: j.reason}
	s.mu.Unlock()
	s.write(w, http.StatusOK, out)
}

func done(status string) bool {
	return status == "Complete" || status == "Failed" || status == "Cancelled"
}
