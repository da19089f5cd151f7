package storage

import (
	"crypto/md5"
	"hash/crc64"
	"sync"
	"testing"

	"github.com/minio/crc64nvme"
)

// The checksum benchmarks behind the choice of CRC-64/NVME implementation
// and of hashing MD5 and CRC in series: go test -run '^$' -bench Checksum
// ./pkg/storage. Each hashes 16 MiB chunks (a part) of one 64 MiB buffer.
const benchChunk = 16 << 20

func benchData() []byte {
	p := make([]byte, 64<<20)
	x := uint64(88172645463325252)
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
	return p
}

func benchEach(b *testing.B, f func([]byte)) {
	p := benchData()
	b.SetBytes(int64(len(p)))
	b.ResetTimer()
	for b.Loop() {
		for off := 0; off < len(p); off += benchChunk {
			f(p[off : off+benchChunk])
		}
	}
}

func BenchmarkChecksumCRC64Table(b *testing.B) {
	var c uint64
	benchEach(b, func(p []byte) { c = crc64.Update(c, CRC64NVMETable, p) })
}

func BenchmarkChecksumCRC64NVME(b *testing.B) {
	var c uint64
	benchEach(b, func(p []byte) { c = crc64nvme.Update(c, p) })
}

func BenchmarkChecksumMD5(b *testing.B) {
	h := md5.New()
	benchEach(b, func(p []byte) { h.Write(p) })
}

// BenchmarkChecksumMD5ThenCRC is both sums in series on one goroutine.
func BenchmarkChecksumMD5ThenCRC(b *testing.B) {
	h := md5.New()
	var c uint64
	benchEach(b, func(p []byte) { h.Write(p); c = crc64nvme.Update(c, p) })
}

// BenchmarkChecksumMD5AndCRCConcurrent hashes each chunk with MD5 and CRC
// on two goroutines at once.
func BenchmarkChecksumMD5AndCRCConcurrent(b *testing.B) {
	h := md5.New()
	var c uint64
	var wg sync.WaitGroup
	benchEach(b, func(p []byte) {
		wg.Go(func() { c = crc64nvme.Update(c, p) })
		h.Write(p)
		wg.Wait()
	})
}

// BenchmarkChecksumMD5ThenCRCTable is what the read path did before:
// MD5 then hash/crc64's table CRC in series.
func BenchmarkChecksumMD5ThenCRCTable(b *testing.B) {
	h := md5.New()
	var c uint64
	benchEach(b, func(p []byte) { h.Write(p); c = crc64.Update(c, CRC64NVMETable, p) })
}
