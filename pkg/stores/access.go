package stores

import (
	"fmt"
	"strings"

	"github.com/millfleet/mill/pkg/endpoint"
)

// Access is how an s3 store is reached: stores with equal Access can share
// one S3 client (and copy between them server-side).
type Access struct {
	Region, Endpoint, RoleARN, Profile        string
	AllowInsecureEndpoint, AmbientCredentials bool
}

// Access returns how s is reached.
func (s Store) Access() Access {
	return Access{Region: s.Region, Endpoint: s.Endpoint, RoleARN: s.RoleARN, Profile: s.Profile,
		AllowInsecureEndpoint: s.AllowInsecureEndpoint, AmbientCredentials: s.AmbientCredentials}
}

// accessProblems lists what is wrong with how an s3 store is reached: its
// endpoint (pkg/endpoint's rules) and which credentials it gets.
func (s Store) accessProblems() []string {
	var out []string
	if s.Endpoint != "" {
		if err := endpoint.Check(s.Endpoint, s.AllowInsecureEndpoint); err != nil {
			out = append(out, err.Error())
		}
	} else if s.AllowInsecureEndpoint {
		out = append(out, "allowInsecureEndpoint needs an endpoint")
	}
	if s.Profile != "" && (strings.ContainsFunc(s.Profile, func(r rune) bool { return r <= ' ' || r == 0x7f }) || len(s.Profile) > 128) {
		out = append(out, fmt.Sprintf("profile %q is not a profile name", s.Profile))
	}
	switch {
	case s.RoleARN != "" && s.Profile != "":
		out = append(out, "roleArn and profile: name one (a profile can assume a role itself: role_arn in the AWS config file)")
	case s.AmbientCredentials && (s.RoleARN != "" || s.Profile != ""):
		named := "roleArn"
		if s.Profile != "" {
			named = "profile"
		}
		out = append(out, fmt.Sprintf("ambientCredentials and %s: name one", named))
	case !s.ambientAllowed() && s.RoleARN == "" && s.Profile == "":
		out = append(out, fmt.Sprintf("endpoint %q is not an AWS endpoint: name the credentials it gets (\"roleArn\" or \"profile\"), or set \"ambientCredentials\": true to send it the default chain's", s.Endpoint))
	}
	return out
}

// ambientAllowed reports whether the default chain's credentials may be
// sent to the store: it is on AWS's own endpoints (none set, or an AWS
// one), or it says so.
func (s Store) ambientAllowed() bool {
	return s.Endpoint == "" || endpoint.AWS(s.Endpoint) || s.AmbientCredentials
}
