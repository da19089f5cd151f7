package s3store

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/millfleet/mill/pkg/storage"
)

// upload is one multipart upload under way: its parts so far and the sums
// of the bytes read in order. Safe for concurrent use.
type upload struct {
	bucket, target string
	id             string
	partSize, size int64

	mu     sync.Mutex
	parts  map[int32]cpPart // uploaded
	hashed int64            // sums covers [0, hashed)
	state  []byte           // marshalled sums at hashed
	sums   *storage.Sums
}

func (u *upload) done(num int32) (cpPart, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c, ok := u.parts[num]
	return c, ok
}

func (u *upload) completed() []types.CompletedPart {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]types.CompletedPart, 0, len(u.parts))
	for _, c := range u.parts {
		out = append(out, types.CompletedPart{PartNumber: aws.Int32(c.Num), ETag: aws.String(c.ETag), ChecksumCRC64NVME: aws.String(c.CRC)})
	}
	slices.SortFunc(out, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	return out
}

// partsMatch checks that the parts' CRC64NVMEs combine to the content's
// (crc, of the bytes hashed in order), as S3 does at completion: a part
// resumed from a checkpoint that holds other bytes than the content's is
// refused here even where the service does not check (some emulators).
func (u *upload) partsMatch(crc uint64) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	var combined uint64
	var size int64
	for num := int32(1); num <= int32(len(u.parts)); num++ {
		p, ok := u.parts[num]
		if !ok {
			return fmt.Errorf("part %d of %d is missing", num, len(u.parts))
		}
		b, err := base64.StdEncoding.DecodeString(p.CRC)
		if err != nil || len(b) != 8 {
			return fmt.Errorf("%w: part %d has CRC64NVME %q", storage.ErrChecksumMismatch, num, p.CRC)
		}
		combined = storage.CombineCRC64NVME(combined, binary.BigEndian.Uint64(b), p.Size)
		size += p.Size
	}
	if combined != crc || size != u.hashed {
		return fmt.Errorf("%w: the parts' CRC64NVMEs combine to %s over %d bytes, the content's is %s over %d",
			storage.ErrChecksumMismatch, storage.CRC64NVMEBase64(combined), size, storage.CRC64NVMEBase64(crc), u.hashed)
	}
	return nil
}

// num is the part number of the part at off.
func (u *upload) num(off int64) int32 { return int32(off/u.partSize) + 1 }

func (u *upload) hashedAt() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.hashed
}

// firstMissing is the offset of the first part not uploaded.
func (u *upload) firstMissing() int64 {
	u.mu.Lock()
	defer u.mu.Unlock()
	for num := int32(1); ; num++ {
		if _, ok := u.parts[num]; !ok {
			return int64(num-1) * u.partSize
		}
	}
}
