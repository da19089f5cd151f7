package sqsfair

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/millfleet/mill/pkg/queue"
)

// attrValue is a MessageAttributeValue of the API reference.
type attrValue struct {
	DataType         *string `json:",omitempty"`
	StringValue      *string `json:",omitempty"`
	BinaryValue      []byte  `json:",omitempty"`
	StringListValues []any   `json:",omitempty"`
	BinaryListValues []any   `json:",omitempty"`
}

// sendEntry is a SendMessage input or a SendMessageBatchRequestEntry.
type sendEntry struct {
	Id                      *string
	MessageBody             *string
	DelaySeconds            *int
	MessageAttributes       map[string]attrValue
	MessageSystemAttributes map[string]any
	MessageDeduplicationId  *string
	MessageGroupId          *string
}

var (
	batchID  = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)
	attrName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,256}$`)
	dataType = regexp.MustCompile(`^(String|Number|Binary)(\.[^\x00-\x1f]{1,249})?$`)
)

// checkBody applies SQS's message-content rule: #x9 | #xA | #xD | #x20
// to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF.
func checkBody(b string) error {
	for i, r := range b {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(b[i:]); n <= 1 {
				return errShape("InvalidMessageContents", "InvalidMessageContents", "Invalid binary character was found in the message body, the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF")
			}
		}
		if !(r == 0x9 || r == 0xA || r == 0xD || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
			return errShape("InvalidMessageContents", "InvalidMessageContents", "Invalid binary character '#x%X' was found in the message body, the set of allowed characters is #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD | #x10000 to #x10FFFF", r)
		}
	}
	return nil
}

// checkAttrName applies the API reference's naming rule for message
// attributes: up to 256 of A-Z, a-z, 0-9, underscore, hyphen and period,
// no leading or trailing period, no two periods in a row, not starting
// with AWS. or Amazon. (any case).
func checkAttrName(n string) bool {
	l := strings.ToLower(n)
	return attrName.MatchString(n) && !strings.HasPrefix(n, ".") && !strings.HasSuffix(n, ".") &&
		!strings.Contains(n, "..") && !strings.HasPrefix(l, "aws.") && !strings.HasPrefix(l, "amazon.")
}

// entry checks one message to send to q and returns it as memqueue
// stores it: attributes as "<DataType>\x00<value>" (a Binary value in
// base64).
func (q *fqueue) entry(e sendEntry) (queue.SendEntry, error) {
	var out queue.SendEntry
	if e.MessageBody == nil || *e.MessageBody == "" {
		return out, errMissing("MessageBody")
	}
	if err := checkBody(*e.MessageBody); err != nil {
		return out, err
	}
	out.Body = []byte(*e.MessageBody)
	out.Delay = q.delay
	if e.DelaySeconds != nil {
		if *e.DelaySeconds < 0 || *e.DelaySeconds > 900 {
			return out, errInvalid("Value %d for parameter DelaySeconds is invalid. Reason: DelaySeconds must be >= 0 and <= 900.", *e.DelaySeconds)
		}
		out.Delay = time.Duration(*e.DelaySeconds) * time.Second
	}
	if e.MessageDeduplicationId != nil {
		return out, errInvalid("The request includes a parameter that is not valid for this queue type (MessageDeduplicationId is for FIFO queues).")
	}
	if e.MessageGroupId != nil {
		g := *e.MessageGroupId
		if g == "" || queue.CheckGroup(g) != nil {
			return out, errInvalid("Value %.40q for parameter MessageGroupId is invalid. Reason: MessageGroupId can only include alphanumeric and punctuation characters. 1 to 128 in length.", g)
		}
		out.Group = g
	}
	if len(e.MessageSystemAttributes) > 0 {
		return out, errInvalid("MessageSystemAttributes (AWSTraceHeader) are not implemented by the fair-queue stand-in.")
	}
	if len(e.MessageAttributes) > 10 {
		return out, errInvalid("Number of message attributes [%d] exceeds the allowed maximum [10].", len(e.MessageAttributes))
	}
	size := len(out.Body)
	for name, v := range e.MessageAttributes {
		if !checkAttrName(name) {
			return out, errInvalid("Message attribute name %.60q is invalid.", name)
		}
		if v.DataType == nil || !dataType.MatchString(*v.DataType) {
			return out, errInvalid("The message attribute %.60q has an invalid message attribute type, the set of supported type prefixes is Binary, Number, and String.", name)
		}
		if len(v.StringListValues) > 0 || len(v.BinaryListValues) > 0 {
			return out, errInvalid("Message attribute list values are not supported (%.60q).", name)
		}
		var val string
		switch base, _, _ := strings.Cut(*v.DataType, "."); base {
		case "Binary":
			if len(v.BinaryValue) == 0 || v.StringValue != nil {
				return out, errInvalid("The message attribute %.60q with type 'Binary' must use field 'Binary'.", name)
			}
			val = base64.StdEncoding.EncodeToString(v.BinaryValue)
			size += len(v.BinaryValue)
		default:
			if v.StringValue == nil || *v.StringValue == "" || v.BinaryValue != nil {
				return out, errInvalid("The message attribute %.60q must contain non-empty message attribute value for message attribute type %.40q.", name, base)
			}
			if err := checkBody(*v.StringValue); err != nil {
				return out, errInvalid("The message attribute %.60q contains a character SQS does not accept.", name)
			}
			if base == "Number" {
				if _, err := strconv.ParseFloat(*v.StringValue, 64); err != nil {
					return out, errInvalid("Can't cast the value of message (user) attribute %.60q to a number.", name)
				}
			}
			val = *v.StringValue
			size += len(val)
		}
		size += len(name) + len(*v.DataType)
		if out.Attributes == nil {
			out.Attributes = map[string]string{}
		}
		out.Attributes[name] = *v.DataType + "\x00" + val
	}
	if size > q.maxSize {
		return out, errInvalid("One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", q.maxSize)
	}
	return out, nil
}

// wireAttrs turns stored attributes back into MessageAttributeValues.
func wireAttrs(stored map[string]string) map[string]attrValue {
	out := make(map[string]attrValue, len(stored))
	for name, s := range stored {
		typ, val, _ := strings.Cut(s, "\x00")
		v := attrValue{DataType: &typ}
		if strings.HasPrefix(typ, "Binary") {
			v.BinaryValue, _ = base64.StdEncoding.DecodeString(val)
		} else {
			v.StringValue = &val
		}
		out[name] = v
	}
	return out
}

// md5Hex is MD5OfMessageBody.
func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// md5OfAttributes is MD5OfMessageAttributes as the SQS Developer Guide
// ("Calculating the MD5 message digest for message attributes") defines
// it: the attributes sorted by name; for each, the name, the data type
// (each a 4-byte big-endian length and its UTF-8 bytes), one byte of
// transport type (1 for String and Number, 2 for Binary), and the value
// (length and bytes); the MD5 of it all, in hex. "" for none.
func md5OfAttributes(attrs map[string]attrValue) string {
	if len(attrs) == 0 {
		return ""
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	put := func(b []byte) {
		var l [4]byte
		binary.BigEndian.PutUint32(l[:], uint32(len(b)))
		h.Write(l[:])
		h.Write(b)
	}
	for _, n := range names {
		v := attrs[n]
		put([]byte(n))
		put([]byte(*v.DataType))
		if strings.HasPrefix(*v.DataType, "Binary") {
			h.Write([]byte{2})
			put(v.BinaryValue)
		} else {
			h.Write([]byte{1})
			put([]byte(*v.StringValue))
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkBatch applies the batch rules: 1..10 entries, each Id 1..80 of
// alphanumerics, hyphens and underscores, all distinct.
func checkBatch(ids []*string) error {
	switch {
	case len(ids) == 0:
		return errShape("EmptyBatchRequest", "AWS.SimpleQueueService.EmptyBatchRequest", "There should be at least one entry in the request.")
	case len(ids) > queue.MaxBatch:
		return errShape("TooManyEntriesInBatchRequest", "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", "Maximum number of entries per request are 10. You have sent %d.", len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if id == nil {
			return errMissing("Entries.N.Id")
		}
		if !batchID.MatchString(*id) {
			return errShape("InvalidBatchEntryId", "AWS.SimpleQueueService.InvalidBatchEntryId", "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long.")
		}
		if seen[*id] {
			return errShape("BatchEntryIdsNotDistinct", "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", "Id %s repeated.", *id)
		}
		seen[*id] = true
	}
	return nil
}
