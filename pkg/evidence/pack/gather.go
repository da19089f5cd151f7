package pack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/blob"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/evidence"
	"github.com/millfleet/mill/pkg/fixity"
	"github.com/millfleet/mill/pkg/ndsa"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/stores"
)

// Sources are where a pack's evidence is read from. Registry, Index,
// Verdicts, Log and Verifier are required; Policies and Changes may be nil
// (not configured: the pack says so).
type Sources struct {
	Registry *stores.Registry
	// Spaces are the spaces the stores list (as the bit producer sees
	// them); each is one store's copy of a space.
	Spaces   []fixity.Space
	Index    fixity.Index
	Verdicts bitlog.Verdicts
	// Log is the evidence log, Verifier its public key and VerifierKey
	// the key's text (copied into the bundle).
	Log         blob.Store
	Verifier    note.Verifier
	VerifierKey string
	Policies    policy.Reader
	Changes     changelog.Log
	// Clock tells when the pack is made (default the system clock).
	Clock clock.Clock
}

// Pack is the evidence of one period, ready to be written.
type Pack struct {
	Period    Period
	Generated time.Time
	// Verification is the evidence log's (nil with VerifyError when the
	// log could not be read at all).
	Verification *evidence.Report
	VerifyError  string
	VerifierKey  string
	Coverage     []fixity.Coverage
	Copies       []SpaceCopies
	Policies     []AccountPolicy
	History      []changelog.Change
	Events       EventsSummary
	Facts        ndsa.Facts
	Cells        []ndsa.Cell
	// Notes say what could not be gathered.
	Notes []string
}

// SpaceCopies are the copies of one space, one per store.
type SpaceCopies struct {
	Account string      `json:"account"`
	Space   string      `json:"space"`
	Copies  []StoreCopy `json:"copies"`
}

// StoreCopy is one store's copy of a space with the store's place.
type StoreCopy struct {
	Store      string `json:"store"`
	Kind       string `json:"kind"`
	Provider   string `json:"provider,omitempty"`
	Region     string `json:"region,omitempty"`
	ThreatZone string `json:"threatZone,omitempty"`
	// Items counts the copy's live items (content-index rows); Complete
	// says whether it holds as many as the space's fullest copy.
	Items    int64 `json:"items"`
	Complete bool  `json:"complete"`
	// Readable and Archived count the copy's newest fixity verdicts by
	// the storage class they found (an archival class or not).
	Readable int64 `json:"verdictsReadable"`
	Archived int64 `json:"verdictsArchived"`
	// Media is the kind and, when every verdict found an archival
	// class, ":archive" (what the NDSA media-type cells compare).
	Media string `json:"media"`
}

// AccountPolicy is the duplication policy in force for an active account.
type AccountPolicy struct {
	Account string `json:"account"`
	InForce bool   `json:"inForce"`
	// Why is the rule that keeps the account from having one.
	Why    string         `json:"why,omitempty"`
	Policy *policy.Policy `json:"-"`
}

// Build gathers the evidence of period p.
func Build(ctx context.Context, src Sources, p Period) (*Pack, error) {
	if src.Registry == nil || src.Index == nil || src.Verdicts == nil || src.Log == nil || src.Verifier == nil {
		return nil, errors.New("pack: registry, index, verdicts, log and verifier are required")
	}
	clk := src.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	pk := &Pack{Period: p, Generated: clk.Now().UTC(), VerifierKey: src.VerifierKey}

	rep, err := evidence.Verify(ctx, src.Log, src.Verifier, evidence.VerifyOptions{})
	if err != nil {
		pk.VerifyError = err.Error()
	} else {
		pk.Verification = rep
	}
	if pk.Events, err = summarise(ctx, src.Log, src.Verifier, p); err != nil {
		return nil, err
	}

	classes := &classCounter{inner: src.Verdicts, counts: map[fixity.Space]*[2]int64{}}
	cov := fixity.Source{Index: src.Index, Verdicts: classes, Clock: clk}
	pk.Coverage, err = cov.Spaces(ctx, src.Spaces, func(account, storeID string) stores.Fixity {
		s, err := src.Registry.Store(account, storeID)
		if err != nil {
			return stores.Store{}.FixityTarget()
		}
		return s.FixityTarget()
	})
	if err != nil {
		return nil, fmt.Errorf("pack: fixity coverage: %w", err)
	}
	pk.Copies = copiesOf(src.Registry, pk.Coverage, classes.counts)

	if err := pk.policies(ctx, src); err != nil {
		return nil, err
	}
	if err := pk.history(ctx, src.Changes); err != nil {
		return nil, err
	}
	pk.Facts = pk.facts(src.Registry)
	pk.Cells = ndsa.Judge(pk.Facts)
	return pk, nil
}

// classCounter counts the verdicts coverage reads by storage class.
type classCounter struct {
	inner  bitlog.Verdicts
	mu     sync.Mutex
	counts map[fixity.Space]*[2]int64 // readable, archived
}

func (c *classCounter) Verdicts(ctx context.Context, account, storeID, spaceID, after string, limit int) ([]bitlog.Verdict, bool, error) {
	vs, more, err := c.inner.Verdicts(ctx, account, storeID, spaceID, after, limit)
	c.mu.Lock()
	defer c.mu.Unlock()
	k := fixity.Space{Account: account, StoreID: storeID, SpaceID: spaceID}
	n := c.counts[k]
	if n == nil {
		n = &[2]int64{}
		c.counts[k] = n
	}
	for _, v := range vs {
		if v.Archived {
			n[1]++
		} else {
			n[0]++
		}
	}
	return vs, more, err
}

// copiesOf groups the spaces' coverage by (account, space).
func copiesOf(reg *stores.Registry, covs []fixity.Coverage, classes map[fixity.Space]*[2]int64) []SpaceCopies {
	var out []SpaceCopies
	find := func(account, space string) *SpaceCopies {
		for i := range out {
			if out[i].Account == account && out[i].Space == space {
				return &out[i]
			}
		}
		out = append(out, SpaceCopies{Account: account, Space: space})
		return &out[len(out)-1]
	}
	for _, c := range covs {
		sc := StoreCopy{Store: c.StoreID, Items: c.Copies}
		if s, err := reg.Store(c.Account, c.StoreID); err == nil {
			sc.Kind, sc.Provider, sc.Region, sc.ThreatZone = string(s.Kind), s.Provider, s.Region, s.ThreatZone
		}
		if n := classes[fixity.Space{Account: c.Account, StoreID: c.StoreID, SpaceID: c.SpaceID}]; n != nil {
			sc.Readable, sc.Archived = n[0], n[1]
		}
		sc.Media = sc.Kind
		if sc.Archived > 0 && sc.Readable == 0 {
			sc.Media += ":archive"
		}
		sp := find(c.Account, c.SpaceID)
		sp.Copies = append(sp.Copies, sc)
	}
	for i := range out {
		var most int64
		for _, c := range out[i].Copies {
			most = max(most, c.Items)
		}
		for j := range out[i].Copies {
			out[i].Copies[j].Complete = most > 0 && out[i].Copies[j].Items == most
		}
	}
	slices.SortFunc(out, func(a, b SpaceCopies) int {
		return strings.Compare(a.Account+"\x00"+a.Space, b.Account+"\x00"+b.Space)
	})
	return out
}

// policies reads the policy in force of every active account.
func (pk *Pack) policies(ctx context.Context, src Sources) error {
	if src.Policies == nil {
		pk.Notes = append(pk.Notes, "no policy repository was given: the policies in force are not in this pack")
		return nil
	}
	for _, a := range src.Registry.ActiveAccounts() {
		p, err := policy.InForce(ctx, src.Policies, a.ID)
		var refusal *policy.Refusal
		switch {
		case errors.As(err, &refusal):
			pk.Policies = append(pk.Policies, AccountPolicy{Account: a.ID, Why: refusal.Error()})
		case err != nil:
			return fmt.Errorf("pack: policy of account %q: %w", a.ID, err)
		default:
			pk.Policies = append(pk.Policies, AccountPolicy{Account: a.ID, InForce: true, Policy: p})
		}
	}
	return nil
}

// maxHistory bounds the changes a pack lists.
const maxHistory = 10000

// configChange reports whether a change log entry changed the policies
// or the store registry.
func configChange(c changelog.Change) bool {
	return strings.HasPrefix(c.Action, "policy") || strings.Contains(c.Action, "stores") || strings.Contains(c.Action, "accounts")
}

// history lists the changes of the policies and the registry made before
// the period's end, newest first.
func (pk *Pack) history(ctx context.Context, log changelog.Log) error {
	if log == nil {
		pk.Notes = append(pk.Notes, "no change log was given: the policies' history is not in this pack")
		return nil
	}
	after := ""
	for {
		page, next, err := log.List(ctx, after, changelog.MaxPage)
		if err != nil {
			return fmt.Errorf("pack: change log: %w", err)
		}
		for _, c := range page {
			if configChange(c) && c.Time.Before(pk.Period.Until) {
				if len(pk.History) == maxHistory {
					pk.Notes = append(pk.Notes, fmt.Sprintf("the change history is cut at its newest %d entries", maxHistory))
					return nil
				}
				pk.History = append(pk.History, c)
			}
		}
		if next == "" {
			return nil
		}
		after = next
	}
}

// facts are what the NDSA cells are judged on.
func (pk *Pack) facts(reg *stores.Registry) ndsa.Facts {
	f := ndsa.Facts{ActiveAccounts: len(reg.ActiveAccounts()), PolicyChanges: len(pk.History)}
	for _, p := range pk.Policies {
		if p.InForce {
			f.PolicyAccounts++
		}
	}
	for _, sc := range pk.Copies {
		sp := ndsa.Space{Account: sc.Account, Space: sc.Space}
		for _, c := range sc.Copies {
			sp.Copies = append(sp.Copies, ndsa.Copy{Store: sc.Account + "/" + c.Store, Provider: c.Provider, Region: c.Region,
				ThreatZone: c.ThreatZone, Media: c.Media, Items: c.Items})
		}
		f.Spaces = append(f.Spaces, sp)
	}
	for _, c := range pk.Coverage {
		f.Copies += c.Copies
		f.Within += c.Within
		f.NeverVerified += c.NeverVerified
	}
	e := pk.Events
	f.Events = e.Total
	for _, tc := range e.ByType {
		switch evidence.EventType(tc.Type) {
		case evidence.FixityCheck:
			f.FixityChecks += tc.Count
			if tc.Outcome == string(evidence.Failure) {
				f.FixityFailed += tc.Count
			}
		case evidence.Replication:
			f.Replications += tc.Count
		case evidence.Deletion:
			f.Deletions += tc.Count
		}
	}
	f.Repairs, f.RepairsVerified = e.Repairs, e.RepairsVerified
	f.CorruptCopies, f.Unrepaired = e.CorruptCopies, e.Unrepaired
	if r := pk.Verification; r != nil {
		f.Checkpoint = r.Latest != nil
		f.LogVerified = r.Latest != nil && r.OK() && e.Error == ""
		f.LogProblems = len(r.Problems)
	}
	return f
}
