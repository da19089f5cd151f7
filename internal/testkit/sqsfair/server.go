package sqsfair

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// DefaultAccount is the account in the queue URLs and ARNs (moto's).
const DefaultAccount = "123456789012"

// maxRequestBytes bounds a request body: a batch of 10 entries of SQS's
// largest message (1 MiB in all) in JSON, with room for escaping.
const maxRequestBytes = 8 << 20

// Options configure a Server.
type Options struct {
	// Fair delivers as an SQS fair queue does (memqueue's Config.Fair);
	// false delivers in send order, as the emulators do.
	Fair bool
	// Account in the queue URLs and ARNs (DefaultAccount when empty).
	Account string
	// Region in the ARNs ("us-east-1" when empty).
	Region string
}

// Server is the stand-in. Start it with Start; Close stops it.
type Server struct {
	o Options

	ln   net.Listener
	http *http.Server
	url  string

	// ctx ends every long poll when the server closes.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex
	queues map[string]*fqueue // by name
}

// New returns a stand-in with no queues.
func New(o Options) *Server {
	if o.Account == "" {
		o.Account = DefaultAccount
	}
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{o: o, ctx: ctx, cancel: cancel, queues: map[string]*fqueue{}}
}

// Start listens on 127.0.0.1 (a free port) and serves.
func (s *Server) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.ln = ln
	s.url = "http://" + ln.Addr().String()
	s.http = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.http.Serve(ln) }()
	return nil
}

// URL is the endpoint to give the SQS client (its BaseEndpoint, or
// AWS_ENDPOINT_URL_SQS).
func (s *Server) URL() string { return s.url }

// Close ends the long polls and stops serving.
func (s *Server) Close() error {
	s.cancel()
	if s.http == nil {
		return nil
	}
	return s.http.Close()
}

// apiError is an SQS error as the JSON protocol carries it: the shape in
// __type, the query-compatible code and fault in x-amzn-query-error.
type apiError struct {
	status    int
	shape     string // com.amazonaws.sqs#<shape>
	queryCode string // x-amzn-query-error code
	sender    bool
	message   string
}

func (e *apiError) Error() string { return e.queryCode + ": " + e.message }

// Errors of the SQS API reference (shape, query code) and the common
// errors every AWS JSON service answers.
func errQueueMissing() *apiError {
	return &apiError{400, "QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", true, "The specified queue does not exist."}
}

func errInvalid(format string, a ...any) *apiError {
	return &apiError{400, "InvalidParameterValue", "InvalidParameterValue", true, fmt.Sprintf(format, a...)}
}

func errMissing(param string) *apiError {
	return &apiError{400, "MissingParameter", "MissingParameter", true, "The request must contain the parameter " + param + "."}
}

func errShape(shape, queryCode, format string, a ...any) *apiError {
	return &apiError{400, shape, queryCode, true, fmt.Sprintf(format, a...)}
}

// handler is one operation: it decodes its input from body and returns
// its output (marshalled as JSON) or an error.
type handler func(s *Server, ctx context.Context, body []byte) (any, error)

var ops = map[string]handler{
	"CreateQueue":                  (*Server).createQueue,
	"GetQueueUrl":                  (*Server).getQueueURL,
	"GetQueueAttributes":           (*Server).getQueueAttributes,
	"ListQueues":                   (*Server).listQueues,
	"DeleteQueue":                  (*Server).deleteQueue,
	"PurgeQueue":                   (*Server).purgeQueue,
	"SendMessage":                  (*Server).sendMessage,
	"SendMessageBatch":             (*Server).sendMessageBatch,
	"ReceiveMessage":               (*Server).receiveMessage,
	"DeleteMessage":                (*Server).deleteMessage,
	"DeleteMessageBatch":           (*Server).deleteMessageBatch,
	"ChangeMessageVisibility":      (*Server).changeMessageVisibility,
	"ChangeMessageVisibilityBatch": (*Server).changeMessageVisibilityBatch,
}

// ServeHTTP serves the AWS JSON 1.0 protocol: POST /, the operation in
// X-Amz-Target (AmazonSQS.<Operation>), the input as a JSON object.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("x-amzn-RequestId", requestID())
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "AmazonSQS.")
	h := ops[op]
	switch {
	case r.Method != http.MethodPost || !ok:
		writeError(w, &apiError{400, "InvalidAction", "InvalidAction", true,
			fmt.Sprintf("the stand-in serves the AWS JSON 1.0 protocol only: POST with X-Amz-Target AmazonSQS.<Operation>, not %s %q", r.Method, target)})
		return
	case h == nil:
		writeError(w, &apiError{400, "UnknownOperationException", "UnknownOperationException", true,
			fmt.Sprintf("operation %.60q is unknown or not implemented by the fair-queue stand-in", op)})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		writeError(w, &apiError{413, "RequestEntityTooLarge", "RequestEntityTooLarge", true, "the request is larger than the stand-in accepts"})
		return
	}
	if len(body) == 0 {
		body = []byte("{}")
	}
	// A long poll ends when the caller hangs up or the server closes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	out, err := h(s, ctx, body)
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{500, "InternalFailure", "InternalFailure", false, err.Error()}
		}
		writeError(w, ae)
		return
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeError(w, &apiError{500, "InternalFailure", "InternalFailure", false, err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, e *apiError) {
	fault := "Receiver"
	if e.sender {
		fault = "Sender"
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", e.queryCode+";"+fault)
	b, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + e.shape, "message": e.message})
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}

// decode reads the operation's input; a body that is not its JSON is a
// SerializationException, as AWS answers.
func decode(body []byte, v any) error {
	if err := json.Unmarshal(body, v); err != nil {
		return &apiError{400, "SerializationException", "SerializationException", true, "the request body is not the operation's JSON input: " + trim(err.Error())}
	}
	return nil
}

func requestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// trim shortens what a request said before an error quotes it.
func trim(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// Client returns an SQS client of the stand-in (static test credentials;
// the stand-in checks no signature).
func (s *Server) Client(optFns ...func(*sqs.Options)) *sqs.Client {
	return sqs.New(sqs.Options{
		Region:       s.o.Region,
		BaseEndpoint: aws.String(s.url),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	}, optFns...)
}
