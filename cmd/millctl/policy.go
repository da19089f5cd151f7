package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
	"github.com/millfleet/mill/pkg/stores/jsonpos"
)

const policyGetUsage = "millctl policy get ACCOUNT\n\nPrints ACCOUNT-duplication-policy.json from the config source."

// policyGetOptions are the options of policy get.
type policyGetOptions struct{ configOptions }

func (o *policyGetOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("want ACCOUNT")
	}
	repo, err := o.src.policies(ctx)
	if err != nil {
		return err
	}
	p, err := repo.Policy(ctx, args[0])
	if err != nil {
		return printFileErrors(a, err)
	}
	if _, err := policy.InForce(ctx, repo, args[0]); errors.Is(err, policy.ErrNotFound) {
		fmt.Fprintf(a.stderr, "note: this policy is not in force: %v\n", err)
	}
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(b)
	return err
}

const policyPutUsage = `millctl policy put ACCOUNT FILE|-

Validates FILE (- for stdin) as a duplication policy, checks its store ids
against the account's stores in accounts.json (when the registry exists), then
writes ACCOUNT-duplication-policy.json and adds ACCOUNT to
duplication-accounts.json. Nothing is written when validation fails.`

// policyPutOptions are the options of policy put.
type policyPutOptions struct{ configOptions }

func (o *policyPutOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 2 {
		return usagef("want ACCOUNT FILE")
	}
	account, file := args[0], args[1]
	data, err := readInput(a, file, policy.MaxFileSize)
	if err != nil {
		return err
	}
	name := file
	if file == "-" {
		name = "<stdin>"
	}
	p, err := policy.Parse(name, data)
	if err != nil {
		return printFileErrors(a, err)
	}
	printNotes(a, name, p)
	reg, err := o.src.registry(ctx)
	switch {
	case errors.Is(err, stores.ErrNoRegistry):
		fmt.Fprintf(a.stderr, "warning: %v; store ids not checked\n", err)
	case err != nil:
		return printFileErrors(a, err)
	default:
		if reg.Account(account) == nil {
			return fmt.Errorf("account %q is not in the registry (%s)", account, stores.FileName)
		}
		if err := p.Check(reg.Known(account)); err != nil {
			return printFileErrors(a, err)
		}
	}
	repo, err := o.src.policies(ctx)
	if err != nil {
		return err
	}
	if err := repo.Put(ctx, account, p); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "stored %s in %s (%d spaces listed, %d default store policies)\n",
		policy.FileName(account), o.src.String(), len(p.SpacePolicies), len(p.Default))
	return nil
}

const policyDeleteUsage = `millctl policy delete ACCOUNT

Removes ACCOUNT from duplication-accounts.json, then deletes
ACCOUNT-duplication-policy.json, so the account is no longer duplicated (the
copies already made stay where they are). Asks for confirmation on stdin
unless --yes. Deleting a policy that is not there is not an error.`

// policyDeleteOptions are the options of policy delete.
type policyDeleteOptions struct {
	src *configSource
	yes bool
}

func (o *policyDeleteOptions) define(fs *flag.FlagSet, a *app) {
	o.src = configFlags(fs, a)
	fs.BoolVar(&o.yes, "yes", false, "do not ask for confirmation")
}

func (o *policyDeleteOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 1 {
		return usagef("want ACCOUNT")
	}
	account := args[0]
	repo, err := o.src.policies(ctx)
	if err != nil {
		return err
	}
	if !o.yes && !confirm(a, fmt.Sprintf("Delete the duplication policy of %s from %s?", account, o.src.String())) {
		fmt.Fprintln(a.stdout, "policy delete: cancelled, nothing deleted")
		return nil
	}
	if err := repo.Delete(ctx, account); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "deleted %s and its entry in %s from %s\n", policy.FileName(account), policy.AccountsFile, o.src.String())
	return nil
}

const policyValidateUsage = `millctl policy validate FILE...

Checks each FILE: duplication-accounts.json as an account list, anything else
as a duplication policy. With --registry, the store ids of a file named
ACCOUNT-duplication-policy.json are checked against ACCOUNT's stores. Problems
are printed as file:line:col: message; the exit code is 1 when there are any.`

// policyValidateOptions are the options of policy validate.
type policyValidateOptions struct {
	registry string
}

func (o *policyValidateOptions) define(fs *flag.FlagSet, _ *app) {
	fs.StringVar(&o.registry, "registry", "", "local accounts.json `file` to check store ids against")
}

func (o *policyValidateOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) == 0 {
		return usagef("want at least one FILE")
	}
	var reg *stores.Registry
	if o.registry != "" {
		r, err := stores.LoadFile(o.registry)
		if err != nil {
			return printFileErrors(a, err)
		}
		reg = r
	}
	bad := 0
	for _, f := range args {
		if err := validatePolicyFile(a, f, reg); err != nil {
			bad++
			if _, ok := errors.AsType[*jsonpos.Error](err); ok {
				_ = printFileErrors(a, err)
			} else { // not positional (unknown account, unreadable file): say it as is
				fmt.Fprintln(a.stderr, err)
			}
			continue
		}
		fmt.Fprintf(a.stdout, "%s: ok\n", f)
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d files invalid", bad, len(args))
	}
	return nil
}

const policyListUsage = "millctl policy list\n\nPrints each account of duplication-accounts.json with its policy's spaces."

// policyListOptions are the options of policy list.
type policyListOptions struct{ configOptions }

func (o *policyListOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) != 0 {
		return usagef("no arguments expected")
	}
	repo, err := o.src.policies(ctx)
	if err != nil {
		return err
	}
	accts, err := repo.Accounts(ctx)
	if err != nil {
		return printFileErrors(a, err)
	}
	failed := 0
	for _, acct := range accts {
		p, err := repo.Policy(ctx, acct)
		if err != nil {
			failed++
			fmt.Fprintf(a.stdout, "%s\tERROR %v\n", acct, strings.ReplaceAll(err.Error(), "\n", "; "))
			continue
		}
		var parts []string
		for _, s := range p.Spaces() {
			parts = append(parts, s+": "+joinPolicies(p.StorePolicies(s)))
		}
		if len(p.Default) > 0 {
			parts = append(parts, "default: "+joinPolicies(p.Default))
		}
		if len(p.Ignore) > 0 {
			parts = append(parts, "ignored: "+strings.Join(p.Ignore, ","))
		}
		fmt.Fprintf(a.stdout, "%s\t%s\n", acct, strings.Join(parts, "; "))
	}
	if failed > 0 {
		return fmt.Errorf("%d accounts without a valid policy", failed)
	}
	return nil
}

// printNotes prints on stderr what a valid policy implies that its author
// may not expect (the middle store of a chain is never deleted from).
func printNotes(a *app, file string, p *policy.Policy) {
	for _, n := range p.Relays() {
		fmt.Fprintf(a.stderr, "%s: note: %s\n", file, n)
	}
}

func joinPolicies(l []policy.StorePolicy) string {
	s := make([]string, len(l))
	for i, sp := range l {
		s[i] = sp.SrcStoreID + "->" + sp.DestStoreID
	}
	return strings.Join(s, ",")
}

// validatePolicyFile checks one file; see `policy validate`.
func validatePolicyFile(a *app, f string, reg *stores.Registry) error {
	data, err := readInput(a, f, policy.MaxFileSize)
	if err != nil {
		return err
	}
	base := filepath.Base(f)
	if base == policy.AccountsFile {
		_, err := policy.ParseAccounts(f, data)
		return err
	}
	p, err := policy.Parse(f, data)
	if err != nil {
		return err
	}
	printNotes(a, f, p)
	if reg != nil && strings.HasSuffix(base, policy.PolicySuffix) {
		account := strings.TrimSuffix(base, policy.PolicySuffix)
		if reg.Account(account) == nil {
			return fmt.Errorf("%s: account %q is not in the registry", f, account)
		}
		return p.Check(reg.Known(account))
	}
	return nil
}
