package infra

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/millfleet/mill/internal/testkit/testenv"
)

// TestEvidenceTemplateStandsAlone: the evidence stack imports nothing (an
// operator of the main stacks cannot reach it through an export), keeps
// its bucket when the stack goes, and locks in compliance mode.
func TestEvidenceTemplateStandsAlone(t *testing.T) {
	body := readTemplate(t, "evidence.yaml")
	for _, bad := range []string{"ImportValue", "GOVERNANCE"} {
		if strings.Contains(body, bad) {
			t.Errorf("evidence.yaml contains %s", bad)
		}
	}
	for _, want := range []string{"DeletionPolicy: Retain", "UpdateReplacePolicy: Retain", "ObjectLockEnabled: true", "Mode: COMPLIANCE", "Days: !Ref RetentionDays", "Status: Enabled"} {
		if !strings.Contains(body, want) {
			t.Errorf("evidence.yaml lacks %q", want)
		}
	}
	for _, other := range []string{"core.yaml", "alarms.yaml", "workman.yaml", "producers.yaml", "console.yaml"} {
		if strings.Contains(readTemplate(t, other), "evidence") {
			t.Errorf("%s mentions the evidence stack: it must stay apart", other)
		}
	}
}

// TestEvidenceStackDeploys deploys evidence.yaml to the emulator: the bucket
// is versioned with Object Lock in compliance mode at the retention given
// (where the emulator's CloudFormation applies them: LocalStack, not
// moto), the outputs name it, and it stays when the stack is deleted.
func TestEvidenceStackDeploys(t *testing.T) {
	cfg := testenv.AWS(t)
	prefix := testenv.Prefix(t)
	if len(prefix) > 27 {
		prefix = prefix[:26] + "-"
	}
	stack := "mill-evidence-" + strings.TrimSuffix(prefix, "-")
	cfn, s3c := cloudformation.NewFromConfig(cfg.AWS), cfg.S3()
	bucket := prefix + "evidence-" + accountID(t, cfg) + "-" + cfg.AWS.Region
	// No object is written, so the retained bucket can be removed.
	testenv.CleanupBucket(t, s3c, bucket)
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			deleteStack(t, cfn, stack)
		}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	outputs := createStack(ctx, t, cfn, stack, "evidence.yaml", map[string]string{"Prefix": prefix, "RetentionDays": "3"})
	if outputs["EvidenceBucketName"] != bucket || outputs["RetentionDays"] != "3" || !strings.HasSuffix(outputs["EvidenceBucketArn"], ":"+bucket) {
		t.Errorf("outputs %v, want bucket %s", outputs, bucket)
	}
	lock, err := s3c.GetObjectLockConfiguration(ctx, &s3.GetObjectLockConfigurationInput{Bucket: aws.String(bucket)})
	var ae smithy.APIError
	switch {
	case errors.As(err, &ae) && ae.ErrorCode() == "ObjectLockConfigurationNotFoundError" && !isLocalStack(ctx):
		// moto's CloudFormation creates the bucket without its
		// ObjectLockConfiguration. The lock is asserted where the emulator
		// applies it (LocalStack: make test/localstack runs this package),
		// and setup's evidence bucket is checked against moto's S3.
		// (Nor does it enable versioning.)
		t.Logf("the emulator's CloudFormation did not apply ObjectLockConfiguration (moto): lock and versioning not checked here")
	case err != nil:
		t.Errorf("object lock of %s: %v", bucket, err)
	default:
		checkEvidenceLock(t, lock.ObjectLockConfiguration)
		v, err := s3c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Errorf("versioning of %s: %v", bucket, err)
		} else if v.Status != s3types.BucketVersioningStatusEnabled {
			t.Errorf("versioning %q, want Enabled", v.Status)
		}
	}

	deleteStack(t, cfn, stack)
	deleted = true
	if _, err := s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Errorf("the evidence bucket went with its stack: %v", err)
	}
}

// isLocalStack reports whether the emulator answers LocalStack's health
// endpoint.
func isLocalStack(ctx context.Context) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, testenv.Endpoint()+"/_localstack/health", nil)
	if err != nil {
		return false
	}
	resp, err := (&http.Client{Timeout: 3 * time.Second}).Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// checkEvidenceLock checks the bucket's lock: compliance mode, 3 days.
func checkEvidenceLock(t *testing.T, c *s3types.ObjectLockConfiguration) {
	t.Helper()
	if c == nil || c.ObjectLockEnabled != s3types.ObjectLockEnabledEnabled || c.Rule == nil || c.Rule.DefaultRetention == nil ||
		c.Rule.DefaultRetention.Mode != s3types.ObjectLockRetentionModeCompliance || aws.ToInt32(c.Rule.DefaultRetention.Days) != 3 {
		t.Errorf("object lock configuration %+v", c)
	}
}
