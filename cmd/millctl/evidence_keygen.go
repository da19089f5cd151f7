package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/millfleet/mill/pkg/evidence"
)

const evidenceKeygenUsage = `millctl evidence keygen --name NAME --signer FILE --verifier FILE

Makes a new Ed25519 key pair for an evidence log named NAME (e.g.
evidence.example.org/mill): the signer key, secret, written to --signer with
mode 0600 (configuration of the process that writes the log; never the
repository), and the verifier key, public, written to --verifier and printed
(what auditors are given). Neither file may exist: a key is never replaced in
place. A new key starts a new log (the key's name is the log's origin); keep
the old verifier key to check the old log.`

type evidenceKeygenOptions struct{ name, signer, verifier string }

func (o *evidenceKeygenOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.name, "name", "", "the log's `name` (the checkpoints' origin)")
	fs.StringVar(&o.signer, "signer", "", "`file` to write the secret signer key to (mode 0600; must not exist)")
	fs.StringVar(&o.verifier, "verifier", "", "`file` to write the public verifier key to (must not exist)")
}

func (o *evidenceKeygenOptions) run(_ context.Context, a *app, args []string) error {
	if err := noArgs(args); err != nil {
		return err
	}
	if o.name == "" || o.signer == "" || o.verifier == "" {
		return usagef("--name, --signer and --verifier are required")
	}
	if o.signer == o.verifier {
		return usagef("--signer and --verifier must be two files")
	}
	skey, vkey, err := evidence.GenerateKey(o.name)
	if err != nil {
		return fmt.Errorf("--name %q: %w", o.name, err)
	}
	if err := writeNewFile(o.signer, skey+"\n", 0o600); err != nil {
		return err
	}
	if err := writeNewFile(o.verifier, vkey+"\n", 0o644); err != nil {
		return errors.Join(err, os.Remove(o.signer))
	}
	fmt.Fprintln(a.stdout, vkey)
	fmt.Fprintf(a.stderr, "signer key (secret) in %s, verifier key (public) in %s\n", o.signer, o.verifier)
	return nil
}

// writeNewFile creates path (which must not exist) with mode perm and
// writes s to it.
func writeNewFile(path, s string, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}
