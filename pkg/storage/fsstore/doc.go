// Package fsstore is a storage.Provider on a local directory, for tests and
// the embedded dev mode.
//
// # Layout
//
// Each content ID is split on '/'; every segment but the last becomes a
// directory named segment + ".d", and the last names two files: the
// metadata sidecar segment + ".m" (JSON: MD5, size, mimetype, modified time,
// properties and the name of the current blob) and the content itself,
// segment + "." + 16 random hex digits + ".b". The suffixes keep a file "a"
// and a directory "a/" (IDs "a" and "a/b") apart and keep every segment —
// "..", "." included — from ever being used as a path name by itself.
//
//	<root>/.mill-tmp/                      temporary files (same filesystem)
//	<root>/.mill-trash/                    what deletes and overwrites replaced (see Trash)
//	<root>/<space>/.mill-space.json        the space exists; its ACLs
//	<root>/<space>/photos.d/2024.d/cat.jpg.m                      sidecar of "photos/2024/cat.jpg"
//	<root>/<space>/photos.d/2024.d/cat.jpg.3f9a1c20de4b7a61.b     its bytes
//
// Space IDs never start with '.', so ".mill-tmp" and ".mill-trash" cannot
// be spaces and ".mill-space.json" cannot be a content file.
//
// # Atomicity
//
// Put streams into a temporary file, hashing as it goes, fsyncs it, renames
// it to a fresh blob name, then writes the sidecar to a temporary file,
// fsyncs it and renames it over the old sidecar: that rename is the commit.
// The old blob is removed afterwards. A failed, cancelled or mismatched put
// removes its temporary file and leaves the previous version. A crash can
// leave an unreferenced blob or temporary file behind, never a torn item.
// Readers do not lock: Get reads the sidecar, opens the blob it names, and
// retries when a concurrent put replaced it in between.
//
// # Listings
//
// ListContent walks the content directories depth first, each one's
// entries sorted by the IDs they stand for ("a/" for a directory "a.d"),
// starting in each at the marker by binary search. A store keeps the sorted
// entries of the directories it lists (listcache.go) so that a walk reads
// each directory once, not once per page. Names are read with getdents64
// (Linux), a 64 KiB buffer at a time. A directory whose keys fit in
// spillChunk (1 MiB of keys, a length byte each, and 4 bytes an entry:
// about 60,000 13-byte names) is held in memory, its keys in blocks with
// an offset per entry. A larger one is sorted on disk (listindex.go): each
// full chunk is sorted and written as a run of records (a length byte and
// the key; a key may hold any byte but '/' and NUL) to a temporary file,
// the runs are merged, at most 32 at once and in passes beyond that, into
// one index file, and only every 128th key stays in memory with its
// offset; a page finds the marker by binary search among those keys and
// reads the index on from there through a 16 KiB buffer. So reading a
// directory of N names costs O(N log N) time and at most 2 × spillChunk
// (a chunk with its blocks' slack) + 32 × 16 KiB of merge buffers + 128
// KiB of write and read buffers, whatever N is, and a kept index holds
// N/128 keys (about 200 KB for a million 13-byte names). The temporary
// files are created in the directory WithListSpillDir names (default
// os.TempDir(); a registered store's "listSpillDir", see pkg/stores) and
// unlinked at once, so a crash leaves nothing behind; an index file takes
// about N × (key length + 1) bytes of disk, twice that during a merge, and
// is closed when its listing is dropped. Where /tmp is a tmpfs, that disk
// is memory outside the process (about 15 MB at a million names): name a
// directory on disk. New refuses one that is not an absolute path to an
// existing directory (CheckListSpillDir), or that is the root or lies
// inside it, through symbolic links too (ErrUnsafe): a spill never sits
// among the content, even where it cannot be unlinked. A failed spill,
// merge or read fails the listing: a page is never partial.
//
// At most 16 directories and 8 MiB of listing memory are kept (the most
// recent listing even when larger), directories held in memory with fewer
// than 64 entries are not, and the next listing drops one idle for a
// minute. A kept listing is used only while its directory has the
// modification time and inode it had when read, and only if that time was
// at least 2 s older than the read (a change in the same clock tick leaves
// the time unchanged); the store's own writes drop the listings of the
// directory and its parents. Every page is thus the directory as it is
// when asked.
//
// # Trash
//
// Store implements storage.Recoverer. A Delete, a Put over an existing
// item, SetProperties and a Restore first keep the state they replace in
// the trash, inside the root:
//
//	<root>/.mill-trash/<space>/<sha256 of the ID>/<version>.m   the sidecar, the ID and why it was replaced
//	<root>/.mill-trash/<space>/<sha256 of the ID>/<version>.b   the bytes: a hard link to the replaced blob
//
// A version is the UTC time of the replacement and 16 random hex digits;
// entries older than the retention (WithRetention, default
// storage.DefaultRetention) are hidden from Versions and removed when the
// store opens, by PurgeTrash, and at most hourly after a write. The link
// costs no copy (a filesystem without hard links gets a copy); a first
// write keeps nothing. The entry is written before the change commits, so
// a crash leaves the old state current or in the trash, never neither.
// Restore links a version's bytes back as a new blob of the item.
//
// ProviderChecksum is "md5:" + the MD5 recorded in the sidecar at write
// time while the blob is the file the store wrote: the sidecar also
// records the blob's size, modification time and inode, and a blob that
// differs in any of them was replaced behind the store's back. Head then
// reports the MD5 of the blob's bytes as they are (it hashes the file,
// only in that case) and their size, and Get reports no provider checksum
// and the blob's real size, so the sidecar's MD5 is a recorded checksum
// the provider contradicts (storage.ChecksumOf). A change in place that
// keeps all three (bit rot) is found by hashing what Get returns and
// comparing with Info.Checksum, as the bit check does.
//
// # Confinement
//
// Every file access goes through an os.Root opened on the store's
// directory, so no ID, sidecar or symbolic link can make fsstore read,
// write or delete anything outside it. Inside it, fsstore follows only
// what it wrote itself: a space directory, content directory, sidecar or
// blob that is a symbolic link is refused (ErrUnsafe) — so one space or
// item cannot alias another — and listings leave symbolic links out. A
// sidecar is validated before use: the blob it names must be its own item's
// (segment + "." + 16 hex digits + ".b", in the same directory), its MD5 32
// hex digits, its size not negative; anything else is refused with
// ErrUnsafe naming the file, and nothing it names is touched. Files that
// are opened are checked to be the regular file that was looked at, so a
// link swapped in meanwhile is refused too. (Two processes must not write
// one root at once; the checks guard against a tampered or careless tree,
// and os.Root guarantees the boundary even against a racing one.)
//
// # IDs
//
// Content IDs follow storage.ValidateContentID and, in addition, refuse with
// storage.ErrInvalidID: empty segments (a leading or trailing '/', "//"),
// the segments "." and "..", and segments longer than MaxSegmentLen bytes.
package fsstore
