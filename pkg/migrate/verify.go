package migrate

import (
	"fmt"

	"github.com/millfleet/mill/pkg/storage"
)

// Verify checks one copy. want is DuraCloud's recorded MD5 and size the
// source's size; read holds the sums of the bytes read at the source (and
// sent to the destination), dst the destination's Info after the write
// and back the sums of the destination's bytes read back. The copy is
// verified when the bytes read have DuraCloud's MD5 and the size, and the
// bytes read back have the same length, MD5 and CRC-64/NVME and do not
// contradict the destination provider's own digest. A source mismatch is
// reported as Corrupt, any other as Failed.
func Verify(want string, size int64, read *storage.Sums, dst *storage.Info, back *storage.Sums) (Outcome, string) {
	if read.MD5() != want || read.Len() != size {
		return Corrupt, fmt.Sprintf("bytes read at the source: MD5 %s, %d bytes; DuraCloud recorded MD5 %s, %d bytes", read.MD5(), read.Len(), want, size)
	}
	if back.Len() != read.Len() || back.MD5() != read.MD5() || back.CRC64NVME() != read.CRC64NVME() {
		return Failed, fmt.Sprintf("read back from the destination: MD5 %s, CRC-64/NVME %s, %d bytes; read at the source: MD5 %s, CRC-64/NVME %s, %d bytes",
			back.MD5(), storage.CRC64NVMEBase64(back.CRC64NVME()), back.Len(), read.MD5(), storage.CRC64NVMEBase64(read.CRC64NVME()), read.Len())
	}
	if c := storage.ChecksumOf(dst, back); c.ProviderContradicted || c.ClaimContradicted {
		return Failed, fmt.Sprintf("the destination's bytes (MD5 %s) contradict what it records (provider %s, recorded MD5 %s)", back.MD5(), c.Provider, c.Claim)
	}
	return Copied, ""
}
