package objstore

import (
	"fmt"
	"strings"

	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/pkg/storage"
)

// TmpPrefix is where, under a store's prefix, a provider stages an upload
// before copying it to the item.
const TmpPrefix = ".mill-tmp/"

// Layout maps a store's spaces and items onto object names: the space
// marker is Prefix+space, an item Prefix+space+"/"+Encode(id).
type Layout struct {
	Prefix string
	// MaxNameLen is the service's limit on an object name, in bytes.
	MaxNameLen int
	// Encode maps a content ID to the name under its space (nil: the ID
	// itself); EncodedWhat says so in the too-long error (" as a blob
	// name"). Decode reverses it; ok is false for a name Encode cannot
	// have made (nil: the name is the ID).
	Encode      func(string) string
	EncodedWhat string
	Decode      func(string) (id string, ok bool)
}

// CheckPrefix records in p (a provider Config's problems) a store prefix
// longer than half of maxNameLen, the service's name limit: the space and
// the content ID keep at least the other half.
func CheckPrefix(p *validate.Problems, prefix string, maxNameLen int) {
	p.Check(len(prefix) <= maxNameLen/2, "Prefix", fmt.Sprintf("(%d bytes)", len(prefix)), "be at most %d bytes", maxNameLen/2)
}

// MaxContentIDLen returns the longest content ID (as a name) space
// takes: the name limit less the prefix, the space and a slash.
func (l Layout) MaxContentIDLen(space string) int {
	return min(storage.MaxContentIDLen, l.MaxNameLen-len(l.Prefix)-len(space)-1)
}

// SpaceKey returns the name of the space's marker.
func (l Layout) SpaceKey(space string) (string, error) {
	if err := storage.ValidateSpaceID(space); err != nil {
		return "", err
	}
	return l.Prefix + space, nil
}

// MarkerSpace returns the space whose marker is the object name (listed
// under Prefix with the delimiter "/"); ok is false for any other name.
func (l Layout) MarkerSpace(name string) (space string, ok bool) {
	space, ok = strings.CutPrefix(name, l.Prefix)
	return space, ok && storage.ValidateSpaceID(space) == nil
}

// SpacePrefix returns the name prefix of the space's items.
func (l Layout) SpacePrefix(space string) string { return l.Prefix + space + "/" }

// ContentKey returns the name of an item, refusing IDs the service
// cannot name.
func (l Layout) ContentKey(space, id string) (string, error) {
	if err := storage.ValidateSpaceID(space); err != nil {
		return "", err
	}
	if err := storage.ValidateContentID(id); err != nil {
		return "", err
	}
	name := l.encode(id)
	if max := l.MaxContentIDLen(space); len(name) > max {
		return "", fmt.Errorf("%w: content ID is %d bytes%s; with the store prefix and space %q the limit is %d", storage.ErrInvalidID, len(name), l.EncodedWhat, space, max)
	}
	return l.SpacePrefix(space) + name, nil
}

func (l Layout) encode(id string) string {
	if l.Encode == nil {
		return id
	}
	return l.Encode(id)
}

func (l Layout) decode(name string) (string, bool) {
	if l.Decode == nil {
		return name, true
	}
	return l.Decode(name)
}

// TrashItemPrefix is the name prefix of one item's trash copies.
func (l Layout) TrashItemPrefix(space, id string) string {
	return TrashItemPrefix(l.Prefix, space, id)
}

// TmpKey names a staged upload (random: random hex).
func (l Layout) TmpKey(random string) string { return l.Prefix + TmpPrefix + random }
