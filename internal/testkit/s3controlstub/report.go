package s3controlstub

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha1"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

type reportResult struct {
	TaskExecutionStatus string
	Bucket              string
	MD5Checksum         string
	Key                 string
}

type reportManifest struct {
	Format             string
	ReportCreationDate string
	Results            []reportResult
	ReportSchema       string
}

// writeReport writes the completion report: a results CSV of succeeded
// and one of failed tasks (FailedTasksOnly: failed only), then
// manifest.json naming them.
func (s *Server) writeReport(ctx context.Context, j *job, rows []row) error {
	rep := j.req.Report
	bucket := strings.TrimPrefix(rep.Bucket, "arn:aws:s3:::")
	dir := "job-" + j.id + "/"
	if p := strings.Trim(rep.Prefix, "/"); p != "" {
		dir = p + "/" + dir
	}
	m := reportManifest{
		Format: "Report_CSV_20180820", ReportCreationDate: stamp(time.Now()),
		ReportSchema: "Bucket, Key, VersionId, TaskStatus, ErrorCode, HTTPStatusCode, ResultMessage",
	}
	for _, status := range []string{"succeeded", "failed"} {
		if status == "succeeded" && rep.ReportScope == "FailedTasksOnly" {
			continue
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		for _, r := range rows {
			if r.ok != (status == "succeeded") {
				continue
			}
			_ = w.Write([]string{r.o.bucket, r.o.rawKey, r.o.version, status, strconv.Itoa(r.httpStatus), r.code, r.msg})
		}
		w.Flush()
		if buf.Len() == 0 {
			continue
		}
		name := sha1.Sum(append([]byte(j.id+status), buf.Bytes()...))
		key := dir + "results/" + hex.EncodeToString(name[:]) + ".csv"
		if err := s.put(ctx, bucket, key, buf.Bytes()); err != nil {
			return err
		}
		sum := md5.Sum(buf.Bytes())
		m.Results = append(m.Results, reportResult{TaskExecutionStatus: status, Bucket: bucket, MD5Checksum: hex.EncodeToString(sum[:]), Key: key})
	}
	b, _ := json.MarshalIndent(m, "", "    ")
	return s.put(ctx, bucket, dir+"manifest.json", b)
}

func (s *Server) put(ctx context.Context, bucket, key string, body []byte) error {
	if _, err := s.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		return fmt.Errorf("writing the completion report s3://%s/%s failed: %v", bucket, key, err)
	}
	return nil
}
