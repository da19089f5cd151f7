package gcsstore

import (
	"strings"
	"testing"
)

// TestNewClientRules: the endpoint rules of S3 stores hold, anonymous
// access is for an emulator only, and a key file is named by an absolute
// path.
func TestNewClientRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		cc   ClientConfig
		want string // "" = accepted
	}{
		{"emulator", ClientConfig{Endpoint: "http://127.0.0.1:4443", Anonymous: true}, ""},
		{"emulator on another host", ClientConfig{Endpoint: "http://gcs.example.org:4443", AllowInsecureEndpoint: true, Anonymous: true}, ""},
		{"plain http elsewhere", ClientConfig{Endpoint: "http://gcs.example.org", Anonymous: true}, "plain http"},
		{"metadata address", ClientConfig{Endpoint: "https://169.254.169.254", Anonymous: true}, "metadata"},
		{"credentials in the URL", ClientConfig{Endpoint: "https://user:pw@gcs.example.org", Anonymous: true}, "credentials"},
		{"anonymous to Google", ClientConfig{Anonymous: true}, "emulator"},
		{"relative key file", ClientConfig{Endpoint: "https://gcs.example.org", ServiceAccountFile: "key.json"}, "absolute"},
		{"missing key file", ClientConfig{Endpoint: "https://gcs.example.org", ServiceAccountFile: "/nonexistent/mill-key.json"}, "credentials"},
	} {
		c, err := NewClient(t.Context(), tc.cc)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
		if c != nil {
			c.Close()
		}
	}
}
