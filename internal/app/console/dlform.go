package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/pkg/deadletter"
)

// dlFilter reads a filter from a GET's query or a POST's form (after
// readForm: the body only); bad values are a problem for the user.
func dlFilter(r *http.Request) (deadletter.Filter, error) {
	f := deadletter.Filter{Type: r.FormValue("type"), Source: r.FormValue("source"), Error: r.FormValue("error"), ID: r.FormValue("id")}
	for _, v := range []string{f.Type, f.Source, f.Error, f.ID} {
		if len(v) > 256 {
			return f, errors.New("a filter is longer than 256 characters")
		}
	}
	return f, nil
}

// dlFilterOr reads the filter of r, or answers 400 and returns false.
func (s *Server) dlFilterOr(w http.ResponseWriter, r *http.Request, u *auth.User) (deadletter.Filter, bool) {
	f, err := dlFilter(r)
	if err != nil {
		s.errorPage(w, r, u, http.StatusBadRequest, "Bad filter", err.Error())
		return f, false
	}
	return f, true
}

// query encodes f (and extra key, value pairs) for a link.
func dlQuery(f deadletter.Filter, kv ...string) string {
	v := url.Values{}
	for k, x := range map[string]string{"type": f.Type, "source": f.Source, "error": f.Error, "id": f.ID} {
		if x != "" {
			v.Set(k, x)
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			v.Set(kv[i], kv[i+1])
		}
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// describe says what f selects, for people.
func describe(f deadletter.Filter) string {
	var parts []string
	for _, p := range [][2]string{{"type", f.Type}, {"source", f.Source}, {"error contains", f.Error}, {"message", f.ID}} {
		if p[1] != "" {
			parts = append(parts, fmt.Sprintf("%s %q", p[0], p[1]))
		}
	}
	if len(parts) == 0 {
		return "every dead letter"
	}
	return strings.Join(parts, ", ")
}

// redriveForm reads the redrive settings of a request.
func redriveForm(r *http.Request) (rate float64, to string, keep bool, err error) {
	to, keep = r.FormValue("to"), r.FormValue("keep") == "on"
	if k := r.FormValue("keep"); k != "" && k != "on" {
		return 0, "", false, fmt.Errorf("keep %q: want on or nothing", k)
	}
	if to != "" && !slices.Contains(workQueueKeys(), to) {
		return 0, "", false, fmt.Errorf("%q is not one of Mill's work queues", to)
	}
	if v := strings.TrimSpace(r.FormValue("rate")); v != "" {
		if rate, err = strconv.ParseFloat(v, 64); err != nil || rate < 0 || rate > MaxRedriveRate {
			return 0, "", false, fmt.Errorf("the rate must be a number from 0 (no limit) to %d messages a second", MaxRedriveRate)
		}
	}
	return rate, to, keep, nil
}
