// Package sqsfair is a stand-in for Amazon SQS with fair queues, for tests
// only: neither moto nor LocalStack implements SQS fair queues (both
// deliver a standard queue in send order whatever its messages'
// MessageGroupId), so Mill's fairness acceptance test runs here with the
// real sqsqueue client and the real binaries, and against a real SQS
// standard queue under `make test/aws` (scripts/test-aws.sh).
//
// It serves on 127.0.0.1 the AWS JSON 1.0 protocol the aws-sdk-go-v2 SQS
// client speaks (POST /, X-Amz-Target: AmazonSQS.<Operation>) for the
// operations Mill and its tests use: CreateQueue, GetQueueUrl,
// GetQueueAttributes, ListQueues, DeleteQueue, PurgeQueue, SendMessage,
// SendMessageBatch, ReceiveMessage, DeleteMessage, DeleteMessageBatch,
// ChangeMessageVisibility and ChangeMessageVisibilityBatch, as the Amazon
// SQS API Reference defines their inputs, outputs and errors. Errors have
// AWS's JSON shape ("__type": "com.amazonaws.sqs#<Shape>", "message") and
// its x-amzn-query-error header ("<code>;Sender"), as the Developer Guide's
// "Interpreting Amazon SQS JSON API responses" shows; any other operation
// is UnknownOperationException. Requests are validated as the reference
// says for what is implemented: 1..10 batch entries with distinct Ids of
// 1..80 alphanumerics, hyphens and underscores (EmptyBatchRequest,
// TooManyEntriesInBatchRequest, InvalidBatchEntryId,
// BatchEntryIdsNotDistinct), a batch of at most 1 MiB
// (BatchRequestTooLong), message bodies of SQS's characters
// (InvalidMessageContents) within the queue's MaximumMessageSize counting
// attribute names, types and values, DelaySeconds 0..900, MessageGroupId
// of 1..128 ASCII letters, digits and punctuation, no
// MessageDeduplicationId on a standard queue, at most 10 message
// attributes with valid names and String, Number or Binary types,
// MaxNumberOfMessages 1..10, WaitTimeSeconds 0..20, VisibilityTimeout
// 0..43200, queue names of 1..80 characters and known queue attributes
// in range. A body that is not the operation's JSON is a
// SerializationException; no input panics the server.
//
// Messages live in a memqueue.Queue per queue, which holds the semantics:
// visibility timeouts, ApproximateReceiveCount, delays, long polls,
// redrive to the dead-letter queue a RedrivePolicy names, and, with
// Options.Fair, the delivery order of an SQS fair queue (memqueue's
// fair.go, not re-implemented here): a tenant (MessageGroupId) holding
// more than 10% of the in-flight messages is noisy, and receives return
// the quiet tenants' messages first, then the noisy tenant with the
// fewest in flight ("How Amazon SQS fair queues work"). memqueue leaves
// out AWS's second condition (at least 30 of the tenant's messages in
// flight) and its processing-time measure; without Options.Fair delivery
// is in send order, as on the emulators. Replies carry MD5OfMessageBody,
// MD5OfBody and MD5OfMessageAttributes as AWS computes them (the
// Developer Guide's "Calculating the MD5 message digest for message
// attributes"); the SDK checks the body digests. Answers carry their
// Content-Length, as AWS's do. Receipt handles are
// opaque; one the stand-in did not give is ReceiptHandleIsInvalid, a
// stale one deletes nothing, and changing the visibility of a message
// not in flight is InvalidParameterValue naming the ReceiptHandle, as AWS
// answers.
//
// Not implemented: request signatures (any credentials are accepted),
// FIFO queues, SetQueueAttributes, tags, permissions, message move tasks,
// ListDeadLetterSourceQueues, message system attributes on send
// (AWSTraceHeader is refused), list-valued attributes, retention (messages
// stay until deleted or purged), ApproximateFirstReceiveTimestamp,
// SequenceNumber and DeadLetterQueueSourceArn on receive (SenderId is the
// account), ListQueues pagination (at most 1,000 URLs), PurgeQueue's
// minute of grace (it empties the queue at once, and refuses a second
// purge within 60 s, as SQS does), and the 12-hour cap on a message's
// total time in flight. Depths are exact, not approximate.
package sqsfair
