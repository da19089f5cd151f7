package task

import (
	"fmt"
	"strconv"
	"time"
)

// The machinery of the typed views (views.go): a reader that takes
// properties off a task, a writer that builds one, and the field table
// each view is declared as.

// reader takes properties off a task one by one, collecting the first
// error; what it never took is the view's Extra.
type reader struct {
	typ   Type
	props map[string]string
	taken map[string]bool
	err   error
}

func newReader(t *Task, want Type) *reader {
	r := &reader{typ: want, taken: map[string]bool{}}
	switch {
	case t == nil:
		r.err = &ValidationError{Type: want, Msg: "nil task"}
	case t.Type != want:
		r.err = &ValidationError{Type: want, Msg: fmt.Sprintf("wrong task type %q", string(t.Type))}
	default:
		r.props = t.Props
	}
	return r
}

func (r *reader) fail(key, msg string) {
	if r.err == nil {
		r.err = &ValidationError{Type: r.typ, Key: key, Msg: msg}
	}
}

func (r *reader) opt(key string) string {
	r.taken[key] = true
	return r.props[key]
}

func (r *reader) req(key string) string {
	v := r.opt(key)
	if v == "" {
		r.fail(key, "")
	}
	return v
}

func (r *reader) optInt64(key string) *int64 {
	v := r.opt(key)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(key, fmt.Sprintf("not an integer: %q", v))
		return nil
	}
	if n < 0 {
		r.fail(key, fmt.Sprintf("negative: %q", v))
		return nil
	}
	return &n
}

func (r *reader) reqInt(key string) int {
	v := r.req(key)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		r.fail(key, fmt.Sprintf("not an integer: %q", v))
	}
	return n
}

func (r *reader) optBool(key string) bool {
	v := r.opt(key)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		r.fail(key, fmt.Sprintf("not a boolean: %q", v))
	}
	return b
}

// extra returns the properties never taken, or nil when there are none.
func (r *reader) extra() map[string]string {
	var out map[string]string
	for k, v := range r.props {
		if !r.taken[k] {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// writer builds a task: Extra first, then the view's fields over it.
type writer struct{ t *Task }

func newWriter(typ Type, attempts int, extra map[string]string) writer {
	t := New(typ, extra)
	t.Attempts = attempts
	delete(t.Props, KeyType)
	delete(t.Props, KeyAttempts)
	return writer{t}
}

// set writes v under key, or removes key when v is empty.
func (w writer) set(key, v string) {
	if v == "" {
		delete(w.t.Props, key)
		return
	}
	w.t.Props[key] = v
}

func (w writer) setInt64(key string, n *int64) {
	if n == nil {
		delete(w.t.Props, key)
		return
	}
	w.t.Props[key] = strconv.FormatInt(*n, 10)
}

// field is one property of a view V: how it is read off a task and written
// back. Each view is a table of fields, read in order (the first problem
// is the error) and written in any order.
type field[V any] struct {
	read  func(r *reader, v *V)
	write func(w writer, v *V)
}

// str is a string property; required ones are reported missing when empty.
func str[V any](key string, required bool, f func(*V) *string) field[V] {
	return field[V]{
		read: func(r *reader, v *V) {
			if required {
				*f(v) = r.req(key)
			} else {
				*f(v) = r.opt(key)
			}
		},
		write: func(w writer, v *V) { w.set(key, *f(v)) },
	}
}

// optInt64 is an optional non-negative integer property.
func optInt64[V any](key string, f func(*V) **int64) field[V] {
	return field[V]{
		read:  func(r *reader, v *V) { *f(v) = r.optInt64(key) },
		write: func(w writer, v *V) { w.setInt64(key, *f(v)) },
	}
}

// int64Or0 is an optional non-negative integer property read as 0 when
// absent and not written when 0.
func int64Or0[V any](key string, f func(*V) *int64) field[V] {
	return field[V]{
		read: func(r *reader, v *V) {
			if n := r.optInt64(key); n != nil {
				*f(v) = *n
			}
		},
		write: func(w writer, v *V) {
			if n := *f(v); n != 0 {
				w.setInt64(key, &n)
			} else {
				w.set(key, "")
			}
		},
	}
}

// epochMillis is an optional time property, on the wire epoch
// milliseconds: the zero time when absent, not written when zero.
func epochMillis[V any](key string, f func(*V) *time.Time) field[V] {
	return field[V]{
		read: func(r *reader, v *V) {
			if ms := r.optInt64(key); ms != nil {
				*f(v) = time.UnixMilli(*ms).UTC()
			}
		},
		write: func(w writer, v *V) {
			if t := *f(v); !t.IsZero() {
				ms := t.UnixMilli()
				w.setInt64(key, &ms)
			} else {
				w.set(key, "")
			}
		},
	}
}

// optBool is an optional boolean property (false when absent), always
// written.
func optBool[V any](key string, f func(*V) *bool) field[V] {
	return field[V]{
		read:  func(r *reader, v *V) { *f(v) = r.optBool(key) },
		write: func(w writer, v *V) { w.set(key, strconv.FormatBool(*f(v))) },
	}
}

// check is a rule over properties already read; it writes nothing.
func check[V any](rule func(r *reader, v *V)) field[V] {
	return field[V]{read: rule, write: func(writer, *V) {}}
}

// common are the Attempts and Extra every view carries.
type common struct {
	attempts *int
	extra    *map[string]string
}

// readView reads t (which must be of type typ) into a V through fields.
func readView[V any](t *Task, typ Type, fields []field[V], c func(*V) common) (V, error) {
	var v V
	r := newReader(t, typ)
	if r.err != nil {
		return v, r.err
	}
	for _, f := range fields {
		f.read(r, &v)
	}
	if r.err != nil {
		var zero V
		return zero, r.err
	}
	cm := c(&v)
	*cm.extra = r.extra()
	*cm.attempts = t.Attempts
	return v, nil
}

// writeView returns v as a task of type typ: its Extra, then fields.
func writeView[V any](v V, typ Type, fields []field[V], c func(*V) common) *Task {
	cm := c(&v)
	w := newWriter(typ, *cm.attempts, *cm.extra)
	for _, f := range fields {
		f.write(w, &v)
	}
	return w.t
}
