package wiring

import "errors"

// Explain returns what a binary prints for err when it exits: an endpoint
// or database server that cannot be reached (awsconfig.UnreachableError,
// milldb.UnreachableError) is said by its own one line, which names it and
// the likely fix, without the wrapping of the operation that found out;
// any other error is returned unchanged.
func Explain(err error) error {
	var h interface {
		error
		Hint() string
	}
	if errors.As(err, &h) {
		return h
	}
	return err
}
