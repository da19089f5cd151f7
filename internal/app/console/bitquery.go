package console

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/millfleet/mill/pkg/bitlog"
)

// bitQuery is the selection of a bit page, from the query string.
type bitQuery struct {
	Run, Account, Store, Space string
	Result                     bitlog.Result
	Case                       int // -1: any
	Repaired                   bool
	After                      string
}

// maxBitID bounds a run, account, store or space id in a selection.
const maxBitID = 256

// parseBitQuery reads a selection: every value must be text of bounded
// length (a NUL would reach PostgreSQL and fail there), the result, case
// and repaired one of their values, the page token one the console made.
func parseBitQuery(q url.Values) (bitQuery, error) {
	b := bitQuery{Run: q.Get("run"), Account: q.Get("account"), Store: q.Get("store"), Space: q.Get("space"),
		Result: bitlog.Result(strings.ToUpper(q.Get("result"))), Case: -1, Repaired: q.Get("repaired") == "1", After: q.Get("after")}
	for _, f := range [][2]string{{"run", b.Run}, {"account", b.Account}, {"store", b.Store}, {"space", b.Space}} {
		if err := checkText(f[0], f[1], maxBitID); err != nil {
			return b, err
		}
	}
	if b.Result != "" && !b.Result.Valid() {
		return b, fmt.Errorf("result %s: want SUCCESS, FAILURE or ERROR", quoteSafe(q.Get("result")))
	}
	if c := q.Get("case"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 0 || n > 11 {
			return b, fmt.Errorf("case %s: want 0 (none) to 11", quoteSafe(c))
		}
		b.Case = n
	}
	if r := q.Get("repaired"); r != "" && r != "1" {
		return b, fmt.Errorf("repaired %s: want 1 or nothing", quoteSafe(r))
	}
	if b.After != "" {
		k, _, err := bitlog.DecodeToken(b.After)
		if err != nil {
			return b, errors.New("that page link is not valid")
		}
		for _, v := range []string{k.RunID, k.Account, k.StoreID, k.SpaceID, k.ContentID} {
			if checkText("the page link", v, maxParamValue) != nil {
				return b, errors.New("that page link is not valid")
			}
		}
	}
	return b, nil
}

// values writes the selection back as a query string, with changes.
func (b bitQuery) values(set ...string) string {
	v := url.Values{}
	add := func(k, x string) {
		if x != "" {
			v.Set(k, x)
		}
	}
	add("run", b.Run)
	add("account", b.Account)
	add("store", b.Store)
	add("space", b.Space)
	add("result", string(b.Result))
	if b.Case >= 0 {
		v.Set("case", strconv.Itoa(b.Case))
	}
	if b.Repaired {
		v.Set("repaired", "1")
	}
	for i := 0; i+1 < len(set); i += 2 {
		if set[i+1] == "" {
			v.Del(set[i])
		} else {
			v.Set(set[i], set[i+1])
		}
	}
	return v.Encode()
}

// URL returns the URL of path with the selection as its query, with
// key=value pairs changed ("" removes).
func (b bitQuery) URL(path string, set ...string) string {
	if q := b.values(set...); q != "" {
		return path + "?" + q
	}
	return path
}
