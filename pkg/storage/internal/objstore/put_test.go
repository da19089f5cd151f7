package objstore

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/base/validate"
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

// TestUploadRules checks the one defaulting and validation of a store's
// Config.Upload: only zero fields take the defaults, and every field out
// of the store's limits is reported, the part unit included.
func TestUploadRules(t *testing.T) {
	r := UploadRules{
		Default:      storage.Upload{Threshold: 16, Transfer: storage.Transfer{PartSize: 8, Streams: 2}},
		MaxThreshold: 32, MinPartSize: 4, MaxPartSize: 64, PartUnit: 4, MaxStreams: 3,
	}
	got := r.WithDefaults(storage.Upload{Transfer: storage.Transfer{PartSize: 12}})
	if want := (storage.Upload{Threshold: 16, Transfer: storage.Transfer{PartSize: 12, Streams: 2}}); got != want {
		t.Errorf("WithDefaults = %+v, want %+v", got, want)
	}
	if got := r.WithDefaults(storage.Upload{Threshold: -1, Transfer: storage.Transfer{Streams: -1}}); got.Threshold != -1 || got.Streams != -1 {
		t.Errorf("WithDefaults replaced negative fields: %+v (they are for Check to refuse)", got)
	}
	for _, tc := range []struct {
		u    storage.Upload
		want []string
	}{
		{got, nil},
		{storage.Upload{Threshold: 33, Transfer: storage.Transfer{PartSize: 8, Streams: 1}}, []string{"x: Config.Threshold 33: must be within 1..32"}},
		{storage.Upload{Threshold: -1, Transfer: storage.Transfer{PartSize: 6, Streams: 4}}, []string{
			"x: Config.Threshold -1: must be within 1..32",
			"x: Config.PartSize 6: must be a multiple of 4 within 4..64",
			"x: Config.Streams 4: must be within 1..3",
		}},
		{storage.Upload{Threshold: 1, Transfer: storage.Transfer{PartSize: 68, Streams: 0}}, []string{
			"x: Config.PartSize 68: must be a multiple of 4 within 4..64",
			"x: Config.Streams 0: must be within 1..3",
		}},
	} {
		p := validate.New("x: Config")
		r.Check(p, tc.u)
		var msgs []string
		if err := p.Err(); err != nil {
			msgs = strings.Split(err.Error(), "\n")
		}
		if !slices.Equal(msgs, tc.want) {
			t.Errorf("Check(%+v) = %q, want %q", tc.u, msgs, tc.want)
		}
	}
	r.PartUnit = 0
	p := validate.New("x: Config")
	r.Check(p, storage.Upload{Threshold: 1, Transfer: storage.Transfer{PartSize: 65, Streams: 1}})
	if err := p.Err(); err == nil || err.Error() != "x: Config.PartSize 65: must be within 4..64" {
		t.Errorf("Check without a part unit = %v", err)
	}
}
