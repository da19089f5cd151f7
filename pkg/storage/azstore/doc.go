// Package azstore is a storage.Provider on Azure Blob Storage
// (github.com/Azure/azure-sdk-for-go/sdk/storage/azblob), store kind
// "azure".
//
// # Blob layout
//
// A store is a container and a name prefix (Config.Prefix), laid out as
// s3store lays out a bucket without versioning:
//
//	P<space>              space marker (block blob): JSON {"acls":{…}}
//	P<space>/<name>       a content item; name is the content ID encoded
//	P.mill-trash/<space>/<sha256 of the content ID>/<time>-<random>.<reason>
//	                      what a delete, overwrite or property change replaced
//
// Azure reads a backslash in a blob name as a slash, so a content ID is
// stored under a name in which '[' is written "[0" and '\' "[1". The
// encoding is one to one and keeps byte-wise order, so Azure's listing
// (in name order) is the ID order storage.Provider promises; a blob whose
// name the encoding cannot have made is not listed. The length limit
// counts the encoded name. A space is created with If-None-Match: *, so
// exactly one of concurrent creators is told it created it.
//
// # Checksums
//
// An item's MD5 (DuraCloud's checksum) travels as metadata "millmd5"
// (Azure metadata names are C# identifiers), its properties as
// ASCII-escaped JSON in "millprops", Mill's CRC-64/NVME of the bytes it
// sent in "millcrc64nvme", its mimetype as Content-Type. Azure limits
// metadata to 8 KiB: a larger set of properties is refused with
// storage.ErrPropertiesTooLarge.
//
// Azure stores a blob's Content-MD5 but verifies it only when it computes
// it itself (a Put Blob): for a blob committed from blocks the value is
// whatever the writer declared. Mill therefore always measures the MD5 of
// what it sends and declares that (never a value it was merely given),
// and every block and every Put Blob carries a transactional MD5 that
// Azure does verify. Info's ProviderChecksum is the Content-MD5
// ("md5:<hex>"), so the bit check compares an MD5 with an MD5; a blob
// rewritten by another tool with Put Blob gets Azure's MD5 of the new
// bytes and contradicts the kept "millmd5". A blob without Content-MD5
// has no provider checksum and is judged on its bytes.
//
// # Writes
//
// Content up to Config.Threshold is buffered, checked and sent in one
// Put Blob. Larger content is staged in blocks of PartSize, Streams at a
// time, while Mill hashes the stream in order; the block list is
// committed (with Content-MD5, metadata and mimetype) only when the
// stream ended with the promised size and MD5. Nothing is visible before
// the commit, so a failed, cancelled or mismatched put leaves the
// previous version; uncommitted blocks are discarded by Azure after a
// week. Two large puts of one item at once can make one of them fail
// (a commit discards the other's uncommitted blocks), never mix them.
// Resuming an upload across processes (storage.PutOptions.Resume) is not
// implemented.
//
// # Reads
//
// Info.Revision is the blob's ETag (a property change changes it too).
// GetRange reads on condition If-Match, so a rewritten item gives
// storage.ErrChanged. The Archive tier is reported as archived
// (storage.ErrArchived on reads); rehydration is not implemented.
//
// # Recovery
//
// Store implements storage.Recoverer with trash copies: before a delete,
// an overwrite, a property change or a restore replaces a blob, it is
// copied server side (Copy Blob, on condition of the ETag read) under
// .mill-trash/. Versions lists them newest first (IDs "trash:<name>");
// Restore copies one back. A lifecycle management rule on the prefix
// expires them after the retention. Blob versioning and soft delete,
// where the account enables them, are not read: Azurite, the emulator
// the tests run on, implements neither, and the trash works the same
// everywhere.
package azstore
