package wiring

import (
	"errors"
	"flag"

	"github.com/millfleet/mill/internal/ops/setup"
	"github.com/millfleet/mill/pkg/queue"
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

// QueuePrefixFlag defines --queue-prefix on fs.
func QueuePrefixFlag(fs *flag.FlagSet) *string {
	return fs.String("queue-prefix", queue.DefaultPrefix, "`prefix` of the queue names made from queue keys")
}

// DatabaseURLFlag defines --database-url (MILL_DATABASE_URL) on fs: the
// PostgreSQL connection URL of what (the command's tables), required as
// required says.
func DatabaseURLFlag(fs *flag.FlagSet, what, required string) *string {
	return fs.String("database-url", "", "PostgreSQL connection `URL` of "+what+"\n(postgres://user:pass@host:port/db?sslmode=disable); "+required)
}

// DatabaseURLRequired is the error of a command run without the
// --database-url it needs; why completes the sentence.
func DatabaseURLRequired(why string) error {
	return errors.New("--database-url (MILL_DATABASE_URL) is required" + why)
}
