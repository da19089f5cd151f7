// Package validate collects the problems of a configuration struct in the
// one style every Config.validate of Mill reports them (docs/ARCHITECTURE.md,
// Repository layout):
//
//	pkg: Config.Field is required
//	pkg: Config.Field value: must …
//
// Every problem is collected, and Err joins them, so a caller learns all
// that is wrong at once.
package validate

import (
	"errors"
	"fmt"
	"reflect"
)

// Problems collects the problems of one configuration. The zero value is
// not usable: make one with New.
type Problems struct {
	prefix string
	errs   []error
}

// New returns an empty collection for the struct named by prefix, e.g.
// "bit: Config".
func New(prefix string) *Problems { return &Problems{prefix: prefix} }

// Struct returns a collection for the struct cfg (or the struct cfg points
// to), named by prefix, that holds the problems of its required fields
// (Required): where every Config's validation starts.
func Struct(prefix string, cfg any) *Problems {
	p := New(prefix)
	p.Required(cfg)
	return p
}

// Require records "prefix.field is required" unless present.
func (p *Problems) Require(field string, present bool) {
	if !present {
		p.errs = append(p.errs, fmt.Errorf("%s.%s is required", p.prefix, field))
	}
}

// Required records "prefix.Field is required" for each field of the struct
// cfg (or the struct cfg points to) tagged `validate:"required"` that holds
// its zero value: a nil port, queue or function, an empty name. The tag
// is the one place a Config says a field must be set.
func (p *Problems) Required(cfg any) {
	v := reflect.Indirect(reflect.ValueOf(cfg))
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("validate") == "required" && v.Field(i).IsZero() {
			p.Require(t.Field(i).Name, false)
		}
	}
}

// Check records "prefix.field value: must rule" unless ok; rule is
// formatted with args.
func (p *Problems) Check(ok bool, field string, value any, rule string, args ...any) {
	if !ok {
		p.errs = append(p.errs, fmt.Errorf("%s.%s %v: must %s", p.prefix, field, value, fmt.Sprintf(rule, args...)))
	}
}

// Add records err, prefixed, when it is not nil (a problem found by other
// code, e.g. a nested config's validation).
func (p *Problems) Add(field string, err error) {
	if err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s.%s: %w", p.prefix, field, err))
	}
}

// Err returns every problem joined, or nil when there is none.
func (p *Problems) Err() error { return errors.Join(p.errs...) }
