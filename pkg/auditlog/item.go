package auditlog

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/millfleet/mill/pkg/task"
)

// Attribute names of an entry's item (besides the key attributes of
// table.go).
const (
	AttrAccount         = "account"
	AttrStoreID         = "storeId"
	AttrSpaceID         = "spaceId"
	AttrContentID       = "contentId"
	AttrAction          = "action"
	AttrUserID          = "userId"
	AttrTime            = "time" // N, epoch milliseconds
	AttrChecksum        = "checksum"
	AttrMimeType        = "mimetype"
	AttrSize            = "size" // N
	AttrProperties      = "properties"
	AttrSpaceACLs       = "spaceAcls"
	AttrSourceSpaceID   = "sourceSpaceId"
	AttrSourceContentID = "sourceContentId"
	AttrStoreType       = "storeType"
	AttrSourceStoreID   = "sourceStoreId"
	AttrHash            = "hash"
)

// Attr is one attribute of an item: a string (S) or a number (N) value.
type Attr struct {
	Name, Value string
	Number      bool
}

// itemAttrs returns the attributes of e's item, keys included, in a fixed
// order; empty optional values are left out. Both implementations use it, so
// they agree on what is stored and on the size check.
func itemAttrs(e Entry) ([]Attr, error) {
	e = e.normalize()
	k := e.Key()
	sk, err := k.SK()
	if err != nil {
		return nil, err
	}
	gsk, err := SpaceSortKey(e.Time, e.ContentID, string(e.Action))
	if err != nil {
		return nil, err
	}
	out := []Attr{
		{Name: AttrPK, Value: k.PK()},
		{Name: AttrSK, Value: sk},
		{Name: AttrGSI1PK, Value: SpaceKey(e.Account, e.StoreID, e.SpaceID)},
		{Name: AttrGSI1SK, Value: gsk},
		{Name: AttrAccount, Value: e.Account},
		{Name: AttrStoreID, Value: e.StoreID},
		{Name: AttrSpaceID, Value: e.SpaceID},
		{Name: AttrAction, Value: string(e.Action)},
		{Name: AttrTime, Value: strconv.FormatInt(e.Time.UnixMilli(), 10), Number: true},
		{Name: AttrHash, Value: k.Hash},
	}
	opt := func(name, v string) {
		if v != "" {
			out = append(out, Attr{Name: name, Value: v})
		}
	}
	opt(AttrContentID, e.ContentID)
	opt(AttrUserID, e.UserID)
	opt(AttrChecksum, e.Checksum)
	opt(AttrMimeType, e.MimeType)
	if e.Size != nil {
		out = append(out, Attr{Name: AttrSize, Value: strconv.FormatInt(*e.Size, 10), Number: true})
	}
	opt(AttrProperties, jsonMap(e.Properties))
	opt(AttrSpaceACLs, jsonMap(e.SpaceACLs))
	opt(AttrSourceSpaceID, e.SourceSpaceID)
	opt(AttrSourceContentID, e.SourceContentID)
	opt(AttrStoreType, e.StoreType)
	opt(AttrSourceStoreID, e.SourceStoreID)
	return out, nil
}

// itemSize is DynamoDB's size of the item: the UTF-8 lengths of attribute
// names plus values (a number counts at most 21 bytes; we count its digits
// plus one, an overestimate).
func itemSize(attrs []Attr) int {
	n := 0
	for _, a := range attrs {
		n += len(a.Name) + len(a.Value)
		if a.Number {
			n++
		}
	}
	return n
}

// CheckEntry validates e and returns its attributes, or ErrInvalid /
// ErrTooLarge.
func CheckEntry(e Entry) ([]Attr, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	attrs, err := itemAttrs(e)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if n := itemSize(attrs); n > MaxItemSize {
		return nil, fmt.Errorf("%w: %d bytes (limit %d); the properties or ACLs are too big", ErrTooLarge, n, MaxItemSize)
	}
	return attrs, nil
}

// EntryFromAttrs rebuilds an entry from stored attribute values (by name).
func EntryFromAttrs(get func(name string) (string, bool)) (Entry, error) {
	s := func(name string) string { v, _ := get(name); return v }
	e := Entry{
		Account: s(AttrAccount), StoreID: s(AttrStoreID), SpaceID: s(AttrSpaceID), ContentID: s(AttrContentID),
		Action: task.Action(s(AttrAction)), UserID: s(AttrUserID), Checksum: s(AttrChecksum), MimeType: s(AttrMimeType),
		SourceSpaceID: s(AttrSourceSpaceID), SourceContentID: s(AttrSourceContentID), StoreType: s(AttrStoreType),
		SourceStoreID: s(AttrSourceStoreID),
	}
	ms, err := strconv.ParseInt(s(AttrTime), 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("attribute %s: %w", AttrTime, err)
	}
	e.Time = time.UnixMilli(ms).UTC()
	if v, ok := get(AttrSize); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Entry{}, fmt.Errorf("attribute %s: %w", AttrSize, err)
		}
		e.Size = &n
	}
	for name, dst := range map[string]*map[string]string{AttrProperties: &e.Properties, AttrSpaceACLs: &e.SpaceACLs} {
		if v, ok := get(name); ok {
			if err := json.Unmarshal([]byte(v), dst); err != nil {
				return Entry{}, fmt.Errorf("attribute %s: %w", name, err)
			}
		}
	}
	return e, nil
}
