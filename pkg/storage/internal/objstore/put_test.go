package objstore

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/millfleet/mill/pkg/storage"
)

// TestPutSplit checks the order of a put's front: the name, checksum,
// properties and space are refused before any content is read, and the
// content then goes whole or streamed by the threshold.
func TestPutSplit(t *testing.T) {
	var got string
	noSpace := errors.New("no space")
	p := Put{
		Layout:     Layout{Prefix: "p/", MaxNameLen: 1024},
		Threshold:  4,
		CheckProps: func(want string, props map[string]string) error { return nil },
		NeedSpace: func(ctx context.Context, space string) error {
			if space != "s" {
				return noSpace
			}
			return nil
		},
		Whole: func(ctx context.Context, key, space, id string, data []byte, want string, opts storage.PutOptions) (*storage.Info, error) {
			got = "whole " + key + " " + string(data) + " " + want
			return &storage.Info{}, nil
		},
		Stream: func(ctx context.Context, key, space, id string, r io.Reader, want string, opts storage.PutOptions) (*storage.Info, error) {
			b, _ := io.ReadAll(r)
			got = "stream " + key + " " + string(b)
			return &storage.Info{}, nil
		},
	}
	untouched := strings.NewReader("abc")
	if _, err := p.Run(t.Context(), "s", "", untouched, storage.PutOptions{Size: -1}); !errors.Is(err, storage.ErrInvalidID) || untouched.Len() != 3 {
		t.Errorf("empty ID: %v, %d bytes left", err, untouched.Len())
	}
	if _, err := p.Run(t.Context(), "s", "x", untouched, storage.PutOptions{Size: -1, Checksum: "zz"}); err == nil || untouched.Len() != 3 {
		t.Errorf("bad checksum: %v, %d bytes left", err, untouched.Len())
	}
	if _, err := p.Run(t.Context(), "t", "x", untouched, storage.PutOptions{Size: -1}); !errors.Is(err, noSpace) || untouched.Len() != 3 {
		t.Errorf("missing space: %v, %d bytes left", err, untouched.Len())
	}
	if _, err := p.Run(t.Context(), "s", "x", strings.NewReader("abc"), storage.PutOptions{Size: -1, Checksum: "900150983cd24fb0d6963f7d28e17f72"}); err != nil || got != "whole p/s/x abc 900150983cd24fb0d6963f7d28e17f72" {
		t.Errorf("small put: %q, %v", got, err)
	}
	if _, err := p.Run(t.Context(), "s", "x", strings.NewReader("abcdef"), storage.PutOptions{Size: -1}); err != nil || got != "stream p/s/x abcdef" {
		t.Errorf("large put: %q, %v", got, err)
	}
}
