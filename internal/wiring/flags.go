package wiring

import (
	"errors"
	"flag"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/storage"
)

// The flag groups the Mill binaries share, each defined once here with its
// default (the names `millctl setup` creates, package setup); ClaimsFlags
// and NotifyFlag are beside what they configure.

// ConfigFlags defines --config-bucket, --config-prefix and --config-dir on
// fs: the configuration source the returned ConfigSource holds once fs is
// parsed.
func ConfigFlags(fs *flag.FlagSet) *ConfigSource {
	c := &ConfigSource{}
	fs.StringVar(&c.Bucket, "config-bucket", setup.DefaultConfigBucket, "S3 `bucket` holding accounts.json, duplication-accounts.json and the policies")
	fs.StringVar(&c.Prefix, "config-prefix", "", "key `prefix` of those files in the config bucket")
	fs.StringVar(&c.Dir, "config-dir", "", "local `directory` holding those files, instead of the config bucket")
	return c
}

// Check reports a source with neither a directory nor a bucket.
func (c ConfigSource) Check() error {
	if c.Dir == "" && c.Bucket == "" {
		return errors.New("--config-bucket or --config-dir is required")
	}
	return nil
}

// Reports says where the bit-integrity reports are kept: an S3 bucket and
// a key prefix in it.
type Reports struct {
	Bucket, Prefix string
}

// ReportsFlags defines --reports-bucket and --reports-prefix on fs.
func ReportsFlags(fs *flag.FlagSet) *Reports {
	r := &Reports{}
	fs.StringVar(&r.Bucket, "reports-bucket", setup.DefaultReportsBucket, "S3 `bucket` of the reports (bit integrity, completed runs)")
	fs.StringVar(&r.Prefix, "reports-prefix", "", "key `prefix` of the reports in --reports-bucket")
	return r
}

// QueuePrefixFlag defines --queue-prefix on fs.
func QueuePrefixFlag(fs *flag.FlagSet) *string {
	p := new(string)
	QueuePrefixVar(fs, p)
	return p
}

// QueuePrefixVar defines --queue-prefix on fs into p.
func QueuePrefixVar(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "queue-prefix", queue.DefaultPrefix, "`prefix` of the queue names made from queue keys")
}

// TransferFlags defines --transfer-streams and --transfer-part-size on fs:
// how the bytes of a large item move (storage.Transfer), in Workman's
// copies and bit check reads and in millctl migrate duracloud.
func TransferFlags(fs *flag.FlagSet) *storage.Transfer {
	t := &storage.Transfer{}
	fs.IntVar(&t.Streams, "transfer-streams", storage.DefaultStreams, "parts in flight of one streamed transfer: a copy, a bit check read, a migrated item\n(ranged GETs, parts uploaded); memory per transfer is streams x part size")
	fs.Int64Var(&t.PartSize, "transfer-part-size", storage.DefaultPartSize, "`bytes` of one part of a streamed transfer (at least 5 MiB)")
	return t
}

// DatabaseURLFlag defines --database-url (MILL_DATABASE_URL) on fs: the
// PostgreSQL connection URL of what (the command's tables), required as
// required says.
func DatabaseURLFlag(fs *flag.FlagSet, what, required string) *string {
	p := new(string)
	DatabaseURLVar(fs, p, what, required)
	return p
}

// DatabaseURLVar is DatabaseURLFlag into p; an empty what or required
// leaves that part out of the help text.
func DatabaseURLVar(fs *flag.FlagSet, p *string, what, required string) {
	usage := "PostgreSQL connection `URL`"
	if what != "" {
		usage += " of " + what
	}
	usage += "\n(postgres://user:pass@host:port/db?sslmode=disable)"
	if required != "" {
		usage += "; " + required
	}
	fs.StringVar(p, "database-url", "", usage)
}

// DatabaseURLRequired is the error of a command run without the
// --database-url it needs; why completes the sentence.
func DatabaseURLRequired(why string) error {
	return errors.New("--database-url (MILL_DATABASE_URL) is required" + why)
}
