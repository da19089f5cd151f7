package objstore

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/millfleet/mill/pkg/storage"
)

// Metadata names the metadata entries in which a provider keeps an
// item's MD5, properties (JSON) and CRC-64/NVME, and the service's limit
// on them.
type Metadata struct {
	MD5, Props, CRC64 string
	// Limit on the metadata, names plus values, in bytes; What names it
	// in the error ("GCS custom metadata").
	Limit int
	What  string
	// ASCII escapes every non-ASCII character of the properties' JSON
	// (for a service that carries metadata in HTTP headers as is).
	ASCII bool
}

// Build returns an item's metadata (md5hex and crc may be ""), refusing
// more than the service stores with storage.ErrPropertiesTooLarge.
func (m Metadata) Build(md5hex, crc string, props map[string]string) (map[string]string, error) {
	if props == nil {
		props = map[string]string{}
	}
	var v string
	if m.ASCII {
		s, err := ASCIIJSON(props)
		if err != nil {
			return nil, err
		}
		v = s
	} else {
		b, err := json.Marshal(props)
		if err != nil {
			return nil, err
		}
		v = string(b)
	}
	out := map[string]string{m.Props: v}
	if md5hex != "" {
		out[m.MD5] = md5hex
	}
	if crc != "" {
		out[m.CRC64] = crc
	}
	size := len(m.MD5) + 32 + len(m.CRC64) + 12 + len(m.Props) + len(v)
	if size > m.Limit {
		return nil, fmt.Errorf("%w: the properties need %d bytes of %s (limit %d)", storage.ErrPropertiesTooLarge, size, m.What, m.Limit)
	}
	return out, nil
}

// CheckProps refuses properties that, with an MD5 of want, do not fit
// the metadata (Put.CheckProps).
func (m Metadata) CheckProps(want string, props map[string]string) error {
	_, err := m.Build(want, "", props)
	return err
}

// ParseProps reads the properties' JSON ("": none); a value that is not
// JSON gives what it parsed (the service holds what Mill wrote).
func ParseProps(v string) map[string]string {
	props := map[string]string{}
	if v != "" {
		_ = json.Unmarshal([]byte(v), &props)
	}
	return props
}

// Attrs are what a service reports of an object that make an item's
// Info.
type Attrs struct {
	// MD5 is the metadata entry holding the MD5 Mill measured (hex).
	MD5      string
	Size     int64
	Mime     string
	Modified time.Time
	Revision string
	// ContentMD5 is the service's own MD5 of the object, if any: the
	// provider checksum.
	ContentMD5 []byte
	// Props is the metadata entry holding the properties' JSON.
	Props string
}

// Info describes the object as the item id.
func (a Attrs) Info(id string) *storage.Info {
	info := &storage.Info{
		ContentID:  id,
		Checksum:   strings.ToLower(a.MD5),
		Size:       a.Size,
		MimeType:   a.Mime,
		Modified:   a.Modified,
		Revision:   a.Revision,
		Properties: ParseProps(a.Props),
	}
	if info.MimeType == "" {
		info.MimeType = storage.DefaultMimeType
	}
	if len(a.ContentMD5) == 16 {
		info.ProviderChecksum = storage.ProviderMD5(hex.EncodeToString(a.ContentMD5))
	}
	return info
}
