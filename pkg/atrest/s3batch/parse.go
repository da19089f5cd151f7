package s3batch

import (
	"bytes"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/millfleet/mill/pkg/atrest"
)

// resultMessage is the ResultMessage of a succeeded Compute checksum task.
type resultMessage struct {
	ChecksumBase64    *string `json:"checksum_base64"`
	ChecksumHex       *string `json:"checksum_hex"`
	ChecksumAlgorithm string  `json:"checksumAlgorithm"`
	ChecksumType      *string `json:"checksumType"`
}

// sizes of the algorithms' values, in bytes.
var sizes = map[atrest.Algorithm]int{atrest.MD5: 16, atrest.CRC64NVME: 8}

// parseReport yields the lines of one results CSV (Bucket, Key, VersionId,
// TaskStatus, ErrorCode and HTTPStatusCode in either order, ResultMessage),
// marking the objects it reports in pending. It returns errStop when the
// consumer stops.
func parseReport(r io.Reader, name string, alg atrest.Algorithm, pending map[atrest.Object]bool, yield func(atrest.Result, error) bool) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.Line
			}
			if !yield(atrest.Result{}, &LineError{File: name, Line: line, Err: err}) {
				return errStop
			}
			continue
		}
		line, _ := cr.FieldPos(0)
		res, err := parseLine(rec, alg, pending)
		if err != nil {
			err = &LineError{File: name, Line: line, Object: res.Object, Err: err}
			res = atrest.Result{Object: res.Object}
		}
		if !yield(res, err) {
			return errStop
		}
	}
}

// parseLine turns one report line into a Result. On error the Result
// carries the manifest object whose one result the error is, or nothing
// when the line is of no manifest object or of one already reported.
func parseLine(rec []string, alg atrest.Algorithm, pending map[atrest.Object]bool) (atrest.Result, error) {
	if len(rec) != 7 {
		return atrest.Result{}, fmt.Errorf("%d fields, want 7 (Bucket, Key, VersionId, TaskStatus, ErrorCode, HTTPStatusCode, ResultMessage)", len(rec))
	}
	key, err := DecodeKey(rec[1])
	if err != nil {
		return atrest.Result{}, err
	}
	o := atrest.Object{Bucket: rec[0], Key: key, VersionID: rec[2]}
	res := atrest.Result{Object: o}
	done, ok := pending[o]
	if !ok && o.VersionID != "" {
		// A manifest line without a version: S3 may report the version
		// it found current.
		bare := atrest.Object{Bucket: o.Bucket, Key: o.Key}
		if done, ok = pending[bare]; ok {
			o, res.Object = bare, bare
		}
	}
	switch {
	case !ok:
		return atrest.Result{}, fmt.Errorf("%s is not in the job's manifest", show(o))
	case done:
		return atrest.Result{}, fmt.Errorf("%s is reported again", show(o))
	}
	pending[o] = true
	status, code := rec[4], rec[5] // the documented example lines: HTTPStatusCode, ErrorCode
	if _, err := strconv.Atoi(status); err != nil {
		status, code = rec[5], rec[4] // the documented schema: ErrorCode, HTTPStatusCode
	}
	httpStatus := 0
	if status != "" {
		if httpStatus, err = strconv.Atoi(status); err != nil || httpStatus < 100 || httpStatus > 599 {
			return res, fmt.Errorf("HTTP status %q", status)
		}
	}
	msg := rec[6]
	switch rec[3] {
	case "failed":
		res.Error = clean(strings.TrimSpace(code + ": " + msg))
		return res, nil
	case "succeeded":
	default:
		return res, fmt.Errorf("task status %q, want succeeded or failed", clean(rec[3]))
	}
	if httpStatus != 0 && httpStatus/100 != 2 {
		return res, fmt.Errorf("task succeeded with HTTP status %d", httpStatus)
	}
	sum, err := checksum(msg, alg)
	if err != nil {
		return res, err
	}
	res.OK, res.Algorithm, res.Checksum = true, alg, sum
	return res, nil
}

// checksum reads the checksum of alg from a ResultMessage: MD5 as
// lower-case hex, CRC64NVME as standard base64.
func checksum(msg string, alg atrest.Algorithm) (string, error) {
	var m resultMessage
	d := json.NewDecoder(strings.NewReader(msg))
	if err := d.Decode(&m); err != nil {
		return "", fmt.Errorf("result message is not the Compute checksum JSON: %v", err)
	}
	if d.More() {
		return "", errors.New("result message has more than one JSON value")
	}
	if m.ChecksumAlgorithm != string(alg) {
		return "", fmt.Errorf("result message is of algorithm %q, the job computes %s", clean(m.ChecksumAlgorithm), alg)
	}
	if m.ChecksumType != nil && *m.ChecksumType != "FULL_OBJECT" {
		return "", fmt.Errorf("result message is of checksum type %q, the job computes FULL_OBJECT", clean(*m.ChecksumType))
	}
	var val []byte
	if m.ChecksumBase64 != nil {
		b, err := base64.StdEncoding.Strict().DecodeString(*m.ChecksumBase64)
		if err != nil || len(b) != sizes[alg] {
			return "", fmt.Errorf("checksum_base64 %q is not a %s value", clean(*m.ChecksumBase64), alg)
		}
		val = b
	}
	if m.ChecksumHex != nil {
		b, err := hex.DecodeString(*m.ChecksumHex)
		if err != nil || len(b) != sizes[alg] {
			return "", fmt.Errorf("checksum_hex %q is not a %s value", clean(*m.ChecksumHex), alg)
		}
		if val != nil && !bytes.Equal(val, b) {
			return "", errors.New("checksum_base64 and checksum_hex disagree")
		}
		val = b
	}
	if val == nil {
		return "", errors.New("result message has no checksum")
	}
	if alg == atrest.MD5 {
		return hex.EncodeToString(val), nil
	}
	return base64.StdEncoding.EncodeToString(val), nil
}
