package migrate

import (
	"fmt"

	"github.com/millfleet/mill/pkg/storage"
)

// Outcome is what the migration did with one item.
type Outcome string

// Outcomes, in the order the report lists them.
const (
	// Copied: copied, and the copy read back matches the bytes read at
	// the source (MD5 and CRC-64/NVME) and DuraCloud's recorded MD5.
	Copied Outcome = "copied"
	// Skipped: already at the destination with DuraCloud's MD5 and size
	// (a run before this one copied it): nothing written.
	Skipped Outcome = "skipped"
	// Corrupt: the bytes read at the source do not match the MD5
	// DuraCloud recorded (refused: nothing committed at the destination).
	Corrupt Outcome = "corrupt"
	// Differs: the destination holds another item under the same ID
	// (another checksum or size): not overwritten.
	Differs Outcome = "differs"
	// Refused: the item cannot be migrated as it is (no MD5 recorded, its
	// bytes archived, an ID or properties the destination cannot hold).
	Refused Outcome = "refused"
	// Failed: an error on the way (a read, a write, a copy that did not
	// verify); a later run tries the item again.
	Failed Outcome = "failed"
)

// Outcomes lists every outcome in report order.
var Outcomes = []Outcome{Copied, Skipped, Corrupt, Differs, Refused, Failed}

// Action is what Plan decides to do with an item before reading its
// bytes.
type Action struct {
	// Outcome is Copied when the item is to be copied (the copy's
	// verification decides its final outcome), else the item's final
	// outcome (Skipped, Differs, Corrupt, Refused).
	Outcome Outcome
	// MD5 is DuraCloud's recorded MD5 of the item (lower-case hex), ""
	// when it recorded none.
	MD5 string
	// Detail says why, for the report.
	Detail string
}

// Plan decides what to do with one item from its source Head (src, the
// DuraCloud store) and its destination Head (dst, nil when the item is
// not there). It reads no bytes:
//
//	source records no MD5 (not a single-part ETag) → Refused
//	source bytes archived (no restored copy)        → Refused
//	source's recorded MD5 contradicted by S3         → Corrupt
//	not at the destination                           → copy
//	destination has the MD5 and size                 → Skipped
//	destination has another MD5 or size              → Differs
//
// The destination's MD5 is storage.ChecksumOf of its Head: S3's own
// digest of a single-part object, Mill's recorded MD5 of a multipart one
// (whose full-object CRC-64/NVME S3 keeps); a recorded MD5 the provider
// contradicts matches nothing.
func Plan(src, dst *storage.Info) Action {
	c := storage.ChecksumOf(src, nil)
	md5 := c.MD5
	if !storage.ValidMD5(md5) {
		return Action{Outcome: Refused, Detail: "DuraCloud recorded no MD5 for the item (its ETag is no MD5: not written by DuraCloud in one request)"}
	}
	if c.ClaimContradicted {
		return Action{Outcome: Corrupt, MD5: c.Claim, Detail: fmt.Sprintf("recorded MD5 %s, S3 reports %s", c.Claim, c.Provider)}
	}
	if !src.Readable() {
		return Action{Outcome: Refused, MD5: md5, Detail: fmt.Sprintf("bytes archived in storage class %s: restore them, then run again", src.StorageClass)}
	}
	if dst == nil {
		return Action{Outcome: Copied, MD5: md5}
	}
	d := storage.ChecksumOf(dst, nil)
	if d.MD5 == md5 && !d.ClaimContradicted && dst.Size == src.Size {
		return Action{Outcome: Skipped, MD5: md5, Detail: "already at the destination with DuraCloud's MD5 (" + d.Source.Describe() + ") and size"}
	}
	got := d.MD5
	if got == "" {
		got = "none"
	}
	detail := fmt.Sprintf("the destination holds MD5 %s, %d bytes; DuraCloud has MD5 %s, %d bytes", got, dst.Size, md5, src.Size)
	if d.ClaimContradicted {
		detail += "; the destination's recorded MD5 is contradicted by its provider"
	}
	return Action{Outcome: Differs, MD5: md5, Detail: detail + ": not overwritten"}
}
