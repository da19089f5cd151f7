// Package defaults fills the unset fields of a configuration struct from
// a value of the same type that holds the defaults: the first step of the
// one protocol every Config (and Options) of Mill follows.
//
// The package states its defaults once, as a Config literal that names its
// exported Default* constants (flags and docs use those), and fills them
// in before anything else reads the Config:
//
//	var defaultConfig = Config{Workers: DefaultWorkers, Delay: time.Second}
//
//	func (c Config) withDefaults() Config {
//		defaults.Fill(&c, defaultConfig)
//		c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
//		return c
//	}
//
//	func (c Config) validate() error {
//		p := validate.Struct("pkg: Config", c) // the required fields
//		p.Check(c.Workers >= 1, "Workers", c.Workers, "be at least 1")
//		return p.Err()
//	}
//
// Fill treats only a zero field as unset: a negative count or duration is
// then a problem validate reports. FillNonPositive treats a negative number
// as unset too. A Config where only some numbers read negative as unset
// clamps those to 0 before Fill. Defaults that are computed (the clock and
// logger, a host name, one that depends on another field, a fresh value per
// call) are set after the call. New fills, validates, and returns the
// problems before it uses the Config.
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
