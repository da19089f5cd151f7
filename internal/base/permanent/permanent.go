// Package permanent makes sentinel errors that say of themselves that
// retrying cannot help: the domain's errors for what cannot exist (an
// unknown account or store, an ID no store accepts, a store the provider
// refuses to touch, bytes in an archive). processors.IsPermanent looks for
// the method, not for the packages, so the domain declares its errors
// permanent without knowing the processors, and the processors name no
// domain error (docs/ARCHITECTURE.md, Safety).
package permanent

// New returns a sentinel error with text msg whose Permanent method
// reports true. Each call returns a distinct error (compare with
// errors.Is).
func New(msg string) error { return &sentinel{msg: msg} }

type sentinel struct{ msg string }

func (e *sentinel) Error() string { return e.msg }

// Permanent reports true: a task that meets this error fails the same way
// on every retry.
func (e *sentinel) Permanent() bool { return true }
