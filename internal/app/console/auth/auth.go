// Package auth authenticates the console's users and gives each a role
// (docs/ARCHITECTURE.md, Console). Three modes:
//
//   - ALB: behind an AWS Application Load Balancer whose listener
//     authenticates users with OIDC. The load balancer signs the user's
//     claims into the x-amzn-oidc-data header (an ES256 JWT); the console
//     verifies it with the public key the load balancer's region publishes
//     for the token's kid, and checks the signer (the load balancer's ARN),
//     the issuer, the client and the expiry. Roles come from a claim.
//   - Tokens: a file of hashed bearer tokens (user, role, SHA-256 of the
//     token), for small deployments. The browser sends the token in a
//     cookie set by the login form; scripts send it as a bearer token.
//   - None: everyone is one local user; the console refuses this mode
//     unless it listens on a loopback address, and answers loopback host
//     names only (console.Config.AllowedHosts).
//
// Roles are ordered: a viewer reads; an operator also redrives and purges
// dead letters; an admin also edits policies.
package auth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Role is what a user may do.
type Role int

// Roles, weakest first. RoleNone may do nothing.
const (
	RoleNone Role = iota
	RoleViewer
	RoleOperator
	RoleAdmin
)

// Roles lists the roles a user can have.
var Roles = []Role{RoleViewer, RoleOperator, RoleAdmin}

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	case RoleAdmin:
		return "admin"
	}
	return "none"
}

// ParseRole reads "viewer", "operator" or "admin".
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if strings.EqualFold(s, r.String()) {
			return r, nil
		}
	}
	return RoleNone, fmt.Errorf("auth: unknown role %q (want viewer, operator or admin)", s)
}

// Can reports whether a user with role r may do what needs role need.
func (r Role) Can(need Role) bool { return r >= need && r > RoleNone }

// User is an authenticated user.
type User struct {
	// Name identifies the user in pages, logs and the change log (an
	// e-mail address, a token's user name, "local").
	Name string
	Role Role
	// Mode is how the user was authenticated ("alb", "tokens", "none").
	Mode string
}

// Errors of Authenticate (test with errors.Is).
var (
	// ErrNoCredentials: the request carries no credentials at all; the
	// console asks for them (the login form).
	ErrNoCredentials = errors.New("auth: no credentials")
	// ErrRefused: the request's credentials are invalid, expired or
	// unknown. The error says why, for the log; the user is told only
	// that they were refused.
	ErrRefused = errors.New("auth: credentials refused")
)

// Authenticator identifies the user of a request.
//
// Contract: Authenticate returns the user, or an error wrapping
// ErrNoCredentials or ErrRefused. It reads only the request's headers and
// cookies, is safe for concurrent use, and treats every header as hostile
// (bounded sizes, no panics).
type Authenticator interface {
	Authenticate(r *http.Request) (*User, error)
	// Mode names the mode ("alb", "tokens", "none").
	Mode() string
}

// Anonymous is the "none" mode: every request is the user "local" with
// Role. Safe only on a loopback address answering loopback host names
// (the console checks both).
type Anonymous struct{ Role Role }

// Authenticate implements Authenticator.
func (a Anonymous) Authenticate(*http.Request) (*User, error) {
	return &User{Name: "local", Role: a.Role, Mode: a.Mode()}, nil
}

// Mode implements Authenticator.
func (Anonymous) Mode() string { return "none" }
