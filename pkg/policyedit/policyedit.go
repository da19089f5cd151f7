// Package policyedit edits duplication policies in a versioned config store
// (docs/ARCHITECTURE.md, Console): it loads a policy with its version, checks
// a draft field by field with pkg/policy's own validation (the rules of
// `millctl policy validate`, the store ids of the registry), saves with
// optimistic concurrency (a save based on an older version is refused with
// ErrConflict, never applied over someone else's change), lists and
// unlists accounts in duplication-accounts.json, restores earlier versions
// and deletes policies. Every change carries who made it.
//
// It reads and writes the same files, in the same format, as pkg/policy's
// repositories, so Workman, the producers and `millctl policy` see what the
// console saved.
package policyedit

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
)

// Errors (test with errors.Is).
var (
	// ErrConflict: the file changed since the editor read it.
	ErrConflict = configstore.ErrConflict
	// ErrInvalid: the policy breaks a rule; the error lists every problem.
	ErrInvalid = errors.New("policyedit: invalid policy")
	// ErrUnknownAccount: the account is not in the registry.
	ErrUnknownAccount = errors.New("policyedit: account not in the registry")
	// ErrNoPolicy: the account has no policy file.
	ErrNoPolicy = errors.New("policyedit: no policy file")
)

// maxListingRetries bounds the read-modify-write of
// duplication-accounts.json when others change it at the same time.
const maxListingRetries = 5

// Editor edits the policies in files.
type Editor struct {
	files configstore.Store
}

// New returns an editor over files (the config bucket or directory).
func New(files configstore.Store) *Editor { return &Editor{files: files} }

// Files returns the store the editor works on.
func (e *Editor) Files() configstore.Store { return e.files }

// Registry reads and parses accounts.json.
func (e *Editor) Registry(ctx context.Context) (*stores.Registry, error) {
	f, err := e.files.Get(ctx, stores.FileName)
	if errors.Is(err, configstore.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s does not exist", stores.ErrNoRegistry, e.files.Where(stores.FileName))
	}
	if err != nil {
		return nil, err
	}
	return stores.Parse(e.files.Where(stores.FileName), f.Data)
}

// Listed returns the accounts of duplication-accounts.json (none when the
// file does not exist).
func (e *Editor) Listed(ctx context.Context) ([]string, error) {
	l, _, err := e.listed(ctx)
	return l, err
}

func (e *Editor) listed(ctx context.Context) ([]string, *configstore.Version, error) {
	f, err := e.files.Get(ctx, policy.AccountsFile)
	if errors.Is(err, configstore.ErrNotFound) {
		return []string{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	l, err := policy.ParseAccounts(e.files.Where(policy.AccountsFile), f.Data)
	if err != nil {
		return nil, nil, err
	}
	return l, &f.Version, nil
}

// Doc is an account's policy file as it is now.
type Doc struct {
	Account string
	// Exists is false when the account has no policy file; then Policy
	// is nil and Version zero.
	Exists  bool
	Version configstore.Version
	// Raw is the file's content.
	Raw []byte
	// Policy is the parsed file; nil when it does not parse (ParseErr
	// says why: a file written by hand).
	Policy   *policy.Policy
	ParseErr error
}

// Load reads an account's policy file.
func (e *Editor) Load(ctx context.Context, account string) (*Doc, error) {
	name, err := fileName(account)
	if err != nil {
		return nil, err
	}
	d := &Doc{Account: account}
	f, err := e.files.Get(ctx, name)
	if errors.Is(err, configstore.ErrNotFound) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	d.Exists, d.Version, d.Raw = true, f.Version, f.Data
	d.Policy, d.ParseErr = policy.Parse(e.files.Where(name), f.Data)
	return d, nil
}

// Save is a request to store a policy.
type Save struct {
	Account string
	Policy  *policy.Policy
	// Base is the ETag of the version the edit started from; "" means the
	// account had no policy file (the save creates it, and fails with
	// ErrConflict when someone created one meanwhile).
	Base string
	// List adds the account to duplication-accounts.json after the save
	// (as `millctl policy put` does).
	List bool
	Meta configstore.Meta
}

// Save validates the policy against pkg/policy's rules and the account's
// stores in the registry, then writes it when the file is still at
// s.Base. Nothing is written when validation fails (ErrInvalid) or the
// file changed (ErrConflict).
func (e *Editor) Save(ctx context.Context, s Save) (configstore.Version, error) {
	name, err := fileName(s.Account)
	if err != nil {
		return configstore.Version{}, err
	}
	if err := e.Validate(ctx, s.Account, s.Policy); err != nil {
		return configstore.Version{}, err
	}
	data, err := s.Policy.Marshal()
	if err != nil {
		return configstore.Version{}, err
	}
	cond := configstore.Cond{IfMatch: s.Base, IfAbsent: s.Base == ""}
	v, err := e.files.Put(ctx, name, data, cond, s.Meta)
	if err != nil {
		return configstore.Version{}, err
	}
	if s.List {
		if _, err := e.SetListed(ctx, s.Account, true, s.Meta); err != nil {
			return v, fmt.Errorf("policyedit: saved %s, but listing the account failed: %w", name, err)
		}
	}
	return v, nil
}

// Validate checks p as Save would: pkg/policy's rules, then every store id
// against the account's stores in the registry.
func (e *Editor) Validate(ctx context.Context, account string, p *policy.Policy) error {
	reg, err := e.Registry(ctx)
	if err != nil {
		return err
	}
	if reg.Account(account) == nil {
		return fmt.Errorf("%w: %q (%s)", ErrUnknownAccount, account, stores.FileName)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err := p.Check(reg.Known(account)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return nil
}

// Restore makes version id of the account's policy the current one again
// (as a new version), when the file is still at base ("" when the policy
// is deleted now). The old version must pass today's validation.
func (e *Editor) Restore(ctx context.Context, account, id, base string, meta configstore.Meta) (configstore.Version, error) {
	name, err := fileName(account)
	if err != nil {
		return configstore.Version{}, err
	}
	f, err := e.files.GetVersion(ctx, name, id)
	if err != nil {
		return configstore.Version{}, err
	}
	p, err := policy.Parse(e.files.Where(name)+" (version "+id+")", f.Data)
	if err != nil {
		return configstore.Version{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if meta.Action == "" {
		meta.Action = "restore of version " + id
	}
	return e.Save(ctx, Save{Account: account, Policy: p, Base: base, Meta: meta})
}

// Delete removes the account's policy file when it is still at base: the
// account leaves duplication-accounts.json first, so no producer reads a
// listed account without a policy. The deleted versions stay in the
// history.
func (e *Editor) Delete(ctx context.Context, account, base string, meta configstore.Meta) error {
	name, err := fileName(account)
	if err != nil {
		return err
	}
	if base == "" {
		return fmt.Errorf("policyedit: delete %s: the version to delete is required", name)
	}
	cur, err := e.files.Get(ctx, name)
	switch {
	case errors.Is(err, configstore.ErrNotFound):
		return fmt.Errorf("%s was deleted meanwhile: %w", e.files.Where(name), ErrConflict)
	case err != nil:
		return err
	case cur.Version.ETag != base:
		return fmt.Errorf("%s changed meanwhile: %w", e.files.Where(name), ErrConflict)
	}
	if _, err := e.SetListed(ctx, account, false, meta); err != nil {
		return err
	}
	if err := e.files.Delete(ctx, name, configstore.Cond{IfMatch: base}, meta); err != nil {
		return fmt.Errorf("policyedit: %s left duplication-accounts.json but was not deleted: %w", name, err)
	}
	return nil
}

// SetListed adds the account to duplication-accounts.json (listed) or
// removes it, re-reading and retrying when someone else changed the file
// meanwhile: adding or removing one account applies to whatever the list
// holds, so a retry cannot undo another editor's change. Listing needs the
// account's policy file (ErrNoPolicy). It reports whether the file
// changed.
func (e *Editor) SetListed(ctx context.Context, account string, listed bool, meta configstore.Meta) (bool, error) {
	name, err := fileName(account)
	if err != nil {
		return false, err
	}
	if listed {
		if _, err := e.files.Get(ctx, name); errors.Is(err, configstore.ErrNotFound) {
			return false, fmt.Errorf("%w: %s (create the policy first)", ErrNoPolicy, e.files.Where(name))
		} else if err != nil {
			return false, err
		}
	}
	for range maxListingRetries {
		accts, v, err := e.listed(ctx)
		if err != nil {
			return false, err
		}
		i := slices.Index(accts, account)
		switch {
		case listed && i >= 0, !listed && i < 0:
			return false, nil
		case listed:
			accts = append(accts, account)
		default:
			accts = slices.Delete(accts, i, i+1)
		}
		data, err := policy.MarshalAccounts(accts)
		if err != nil {
			return false, err
		}
		cond := configstore.Cond{IfAbsent: true}
		if v != nil {
			cond = configstore.Cond{IfMatch: v.ETag}
		}
		m := meta
		if listed {
			m.Action = "list " + account
		} else {
			m.Action = "unlist " + account
		}
		_, err = e.files.Put(ctx, policy.AccountsFile, data, cond, m)
		if errors.Is(err, configstore.ErrConflict) {
			continue
		}
		return err == nil, err
	}
	return false, fmt.Errorf("policyedit: %s kept changing; tried %d times: %w", e.files.Where(policy.AccountsFile), maxListingRetries, ErrConflict)
}

// History returns up to limit versions of the account's policy file,
// newest first.
func (e *Editor) History(ctx context.Context, account string, limit int) ([]configstore.Version, error) {
	name, err := fileName(account)
	if err != nil {
		return nil, err
	}
	return e.files.History(ctx, name, limit)
}

// Version returns one version of the account's policy file.
func (e *Editor) Version(ctx context.Context, account, id string) (*configstore.File, error) {
	name, err := fileName(account)
	if err != nil {
		return nil, err
	}
	return e.files.GetVersion(ctx, name, id)
}

func fileName(account string) (string, error) {
	name := policy.FileName(account)
	if account == "" {
		return "", fmt.Errorf("policyedit: empty account id: %w", configstore.ErrInvalidName)
	}
	if err := configstore.CheckName(name); err != nil {
		return "", err
	}
	return name, nil
}
