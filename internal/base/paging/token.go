package paging

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// ErrBadToken: a listing was given a page token it did not make. Every
// log's and index's token decoding wraps it (their ErrBadPageToken is this
// error), so a caller tests the refusal of any listing with errors.Is.
var ErrBadToken = errors.New("bad page token")

// EncodeToken returns the page token of a listing's position pos (the
// key the page ended at): its JSON, in URL-safe base64 without padding.
// Backends of one port share the token of a position, so a token is
// stable across them. It fails only for a value JSON cannot encode (a
// position made of strings always encodes).
func EncodeToken(pos any) (string, error) {
	b, err := json.Marshal(pos)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeToken reads a token made by EncodeToken into pos (a pointer). A
// token that is not one fails with an error wrapping ErrBadToken that
// quotes it. "" is not a token: callers read it as "from the start"
// before decoding.
func DecodeToken(tok string, pos any) error {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err == nil {
		err = json.Unmarshal(b, pos)
	}
	if err != nil {
		return fmt.Errorf("%w: %q", ErrBadToken, tok)
	}
	return nil
}
