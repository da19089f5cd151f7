// Package defaults fills the unset fields of a configuration struct from
// a value of the same type that holds the defaults: the first step of the
// one protocol every Config of Mill follows (fill the defaults, then
// report every problem with package validate).
//
// A package states its defaults once, as a Config literal:
//
//	var defaultConfig = Config{Workers: DefaultWorkers, Delay: time.Second}
//
//	func (c Config) withDefaults() Config {
//		defaults.Fill(&c, defaultConfig)
//		…
//	}
//
// Defaults that are computed (from the clock, another field or the
// environment) are set by the package after Fill.
package defaults

import "reflect"

// Fill sets each field of *cfg that holds its zero value to the same field
// of d. A struct field whose fields are all exported (an embedded settings
// struct, say) is filled field by field; any other field (a time.Time, a
// pointer, an interface) is one value.
func Fill[C any](cfg *C, d C) { fill(reflect.ValueOf(cfg).Elem(), reflect.ValueOf(d), false) }

// FillNonPositive is Fill for a Config whose numbers are counts and
// durations that must be positive: a number field that is negative is
// unset too, and gets d's value.
func FillNonPositive[C any](cfg *C, d C) { fill(reflect.ValueOf(cfg).Elem(), reflect.ValueOf(d), true) }

func fill(v, d reflect.Value, nonPositive bool) {
	for i := range v.NumField() {
		f, def := v.Field(i), d.Field(i)
		if def.IsZero() || !f.CanSet() {
			continue
		}
		switch {
		case f.Kind() == reflect.Struct && allExported(f.Type()):
			fill(f, def, nonPositive)
		case f.IsZero(), nonPositive && negative(f):
			f.Set(def)
		}
	}
}

func allExported(t reflect.Type) bool {
	for i := range t.NumField() {
		if !t.Field(i).IsExported() {
			return false
		}
	}
	return true
}

func negative(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() < 0
	case reflect.Float32, reflect.Float64:
		return v.Float() < 0
	}
	return false
}
