package awsconfig_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/awsconfig"
)

// A named profile's keys, never the environment's; a profile without
// credentials of its own or a missing one is an error, not a fallback to
// the instance's credentials.
func TestProfileCredentials(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(creds, []byte("[replica]\naws_access_key_id = AKIAPROFILEKEY000001\naws_secret_access_key = profile-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[profile regiononly]\nregion = eu-west-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", creds)
	t.Setenv("AWS_CONFIG_FILE", conf)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAAMBIENTKEY000001")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "ambient-secret")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	got, err := awsconfig.ProfileCredentials("replica").Retrieve(t.Context())
	if err != nil || got.AccessKeyID != "AKIAPROFILEKEY000001" || got.SecretAccessKey != "profile-secret" {
		t.Fatalf("replica: %+v, %v", got, err)
	}
	if _, err := awsconfig.ProfileCredentials("regiononly").Retrieve(t.Context()); err == nil || !strings.Contains(err.Error(), "names no credentials of its own") {
		t.Errorf("a profile without credentials: %v", err)
	}
	if _, err := awsconfig.ProfileCredentials("nope").Retrieve(t.Context()); err == nil || !strings.Contains(err.Error(), `profile "nope"`) {
		t.Errorf("a missing profile: %v", err)
	}
}
