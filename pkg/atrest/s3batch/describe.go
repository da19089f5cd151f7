package s3batch

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3control"
	ctltypes "github.com/aws/aws-sdk-go-v2/service/s3control/types"

	"github.com/millfleet/mill/pkg/atrest"
)

// State maps an S3 Batch Operations job status to an atrest.State; ok is
// false for a status S3 does not document.
func State(s ctltypes.JobStatus) (atrest.State, bool) {
	switch s {
	case ctltypes.JobStatusComplete:
		return atrest.StateComplete, true
	case ctltypes.JobStatusFailed:
		return atrest.StateFailed, true
	case ctltypes.JobStatusCancelled:
		return atrest.StateCancelled, true
	case ctltypes.JobStatusNew, ctltypes.JobStatusPreparing, ctltypes.JobStatusSuspended, ctltypes.JobStatusReady,
		ctltypes.JobStatusActive, ctltypes.JobStatusPausing, ctltypes.JobStatusPaused, ctltypes.JobStatusCompleting,
		ctltypes.JobStatusCancelling, ctltypes.JobStatusFailing:
		return atrest.StateActive, true
	}
	return "", false
}

// describe returns the job's descriptor.
func (c *Checker) describe(ctx context.Context, jobID string) (*ctltypes.JobDescriptor, error) {
	if !jobIDRE.MatchString(jobID) {
		return nil, fmt.Errorf("s3batch: %q is not a job ID", jobID)
	}
	account, err := c.Account(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.ctl.DescribeJob(ctx, &s3control.DescribeJobInput{AccountId: aws.String(account), JobId: aws.String(jobID)})
	if err != nil {
		return nil, fmt.Errorf("s3batch: describe job %s: %w", jobID, err)
	}
	if out.Job == nil {
		return nil, fmt.Errorf("s3batch: describe job %s: no job in the answer", jobID)
	}
	if got := aws.ToString(out.Job.JobId); got != jobID {
		return nil, fmt.Errorf("s3batch: describe job %s: the answer is of job %q", jobID, got)
	}
	return out.Job, nil
}

// Describe returns the job's status.
func (c *Checker) Describe(ctx context.Context, jobID string) (atrest.Status, error) {
	j, err := c.describe(ctx, jobID)
	if err != nil {
		return atrest.Status{}, err
	}
	return status(j)
}

func status(j *ctltypes.JobDescriptor) (atrest.Status, error) {
	st, ok := State(j.Status)
	if !ok {
		return atrest.Status{}, fmt.Errorf("s3batch: job %s has status %q, which S3 does not document", aws.ToString(j.JobId), j.Status)
	}
	s := atrest.Status{ID: aws.ToString(j.JobId), State: st}
	var reasons []string
	for _, f := range j.FailureReasons {
		r := strings.TrimSpace(aws.ToString(f.FailureCode) + ": " + aws.ToString(f.FailureReason))
		reasons = append(reasons, strings.TrimPrefix(r, ": "))
	}
	if len(reasons) == 0 && st != atrest.StateComplete {
		if u := aws.ToString(j.StatusUpdateReason); u != "" {
			reasons = append(reasons, u)
		}
	}
	if st != atrest.StateComplete {
		s.Reason = clean(strings.Join(reasons, "; "))
	}
	if p := j.ProgressSummary; p != nil {
		s.Total, s.Succeeded, s.Failed = aws.ToInt64(p.TotalNumberOfTasks), aws.ToInt64(p.NumberOfTasksSucceeded), aws.ToInt64(p.NumberOfTasksFailed)
	}
	if st.Done() && j.TerminationDate != nil {
		s.Finished = *j.TerminationDate
	}
	return s, nil
}

// clean keeps a provider's text printable and short.
func clean(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 500 {
			b.WriteString("…")
			break
		}
		if r < 0x20 || r == 0x7f {
			r = ' '
		}
		b.WriteRune(r)
	}
	return b.String()
}
