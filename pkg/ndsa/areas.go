package ndsa

import "fmt"

func integrity(f Facts) [5][]Requirement {
	var out [5][]Requirement
	verified := f.Copies - f.NeverVerified
	checks := func() Requirement {
		if f.FixityChecks == 0 {
			return req("Generate integrity information if not provided with the content", NotMet, "no fixity check in the period's events", SourceEvents)
		}
		return req("Generate integrity information if not provided with the content", Met,
			fmt.Sprintf("%d fixity checks in the period, each recording the digest Mill computed or read", f.FixityChecks), SourceEvents)
	}
	out[1] = []Requirement{
		req("Verify integrity information provided with the content", share(verified, f.Copies),
			fmt.Sprintf("%d of %d copies have a fresh verdict of their bytes", verified, f.Copies), SourceCoverage),
		checks(),
		notEvidenced("Virus-check all content; quarantine as needed", "Mill does not scan content for malware"),
	}
	repl := req("Verify integrity information when moving or copying content", NotEvidenced, "no replication in the period", SourceEvents)
	if f.Replications > 0 {
		repl = req(repl.Text, Met, fmt.Sprintf("%d replications in the period, each verifying the copy's checksum as it is written", f.Replications), SourceEvents)
	}
	backup := req("Back up integrity information in a location separate from the content", NotMet, "no signed checkpoint: the evidence log is empty or missing", SourceCheckpoint, SourceVerification)
	switch {
	case f.Checkpoint && f.LogVerified:
		backup = req(backup.Text, Met, "every fixity event is a leaf of the signed evidence log, kept apart from the content stores, and the log verified", backup.Sources...)
	case f.Checkpoint:
		backup = req(backup.Text, Partial, fmt.Sprintf("the evidence log holds the fixity events but its verification named %d problems", f.LogProblems), backup.Sources...)
	}
	out[2] = []Requirement{
		repl,
		notEvidenced("Use write-blockers when working with original media", "Mill does not handle original media"),
		backup,
	}
	intervals := req("Verify integrity information at fixed intervals", share(f.Within, f.Copies),
		fmt.Sprintf("%d of %d copies verified within their store's fixity interval", f.Within, f.Copies), SourceCoverage)
	documented := req("Document integrity verification processes and outcomes", NotMet, "no fixity check in the period's events", SourceEvents)
	if f.FixityChecks > 0 {
		documented = req(documented.Text, Met, fmt.Sprintf("%d fixity check events with their method and outcome (%d failed)", f.FixityChecks, f.FixityFailed), SourceEvents)
	}
	audit := req("Audit integrity information on demand", NotMet, "the evidence log could not be verified", SourceVerification)
	if f.LogVerified {
		audit = req(audit.Text, Met, "the evidence log was verified when this pack was made; anyone with the public key can repeat it", SourceVerification)
	}
	out[3] = []Requirement{intervals, documented, audit}
	response := req("Verify integrity in response to specific events", NotEvidenced, "no repair in the period", SourceEvents)
	if f.Repairs > 0 {
		response = req(response.Text, share(f.RepairsVerified, f.Repairs),
			fmt.Sprintf("%d of %d repairs followed by a successful fixity check of the repaired copy", f.RepairsVerified, f.Repairs), SourceEvents)
	}
	repair := req("Replace or repair corrupted content", NotEvidenced, "no fixity check failed in the period: nothing to repair", SourceEvents)
	if f.CorruptCopies > 0 {
		repair = req(repair.Text, share(f.CorruptCopies-f.Unrepaired, f.CorruptCopies),
			fmt.Sprintf("%d of %d copies that failed a fixity check were repaired after it", f.CorruptCopies-f.Unrepaired, f.CorruptCopies), SourceEvents)
	}
	out[4] = []Requirement{response, repair}
	return out
}

func control(f Facts) [5][]Requirement {
	var out [5][]Requirement
	pol := share(int64(f.PolicyAccounts), int64(f.ActiveAccounts))
	out[1] = []Requirement{req("Determine the agents authorised to read, write, move and delete content", pol,
		fmt.Sprintf("%d of %d active accounts have duplication policies in force naming the stores Mill's software may write and delete", f.PolicyAccounts, f.ActiveAccounts),
		SourcePolicies)}
	applied := req("Document the authorised agents and apply the authorisations", NotMet, "no policy in force", SourcePolicies, SourceHistory)
	if f.PolicyAccounts > 0 {
		applied = req(applied.Text, Partial,
			fmt.Sprintf("the policies are applied to every task (Mill refuses a copy or deletion they do not allow); %d recorded changes name who made them; the operators' IAM grants and console roles are outside the bundle", f.PolicyChanges),
			SourcePolicies, SourceHistory)
	}
	out[2] = []Requirement{applied}
	logs := req("Keep logs naming the agents that acted on content", NotMet, "no event in the period", SourceEvents)
	if f.Events > 0 {
		logs = req(logs.Text, Met, fmt.Sprintf("%d events in the period, each naming its agent (a Workman instance and Mill version, or an operator)", f.Events), SourceEvents, SourceHistory)
	}
	out[3] = []Requirement{logs}
	review := req("Review the action logs periodically", NotEvidenced, "how often the logs are reviewed is the organisation's", SourceVerification)
	if f.LogVerified {
		review = req(review.Text, Partial, "this pack is one review: the log verified and its events summarised; its periodicity is the organisation's", SourceVerification, SourceEvents)
	}
	out[4] = []Requirement{review}
	return out
}

func metadata(f Facts) [5][]Requirement {
	var out [5][]Requirement
	inventory := req("Inventory the content and its storage locations", NotMet, "the content index lists no copy", SourceCopies, SourceCoverage)
	if f.Copies > 0 {
		inventory = req(inventory.Text, Met, fmt.Sprintf("the content index lists %d copies in %d spaces, each by store", f.Copies, len(f.Spaces)), SourceCopies, SourceCoverage)
	}
	out[1] = []Requirement{
		inventory,
		notEvidenced("Back up the inventory and keep a copy apart from the content", "the content index is backed up with Mill's database, outside this bundle"),
	}
	out[2] = []Requirement{req("Store enough metadata to know what the content is", Partial,
		"Mill keeps each item's checksum, size, media type and properties (technical and administrative); descriptive metadata is the repository's", SourceCopies)}
	out[3] = []Requirement{
		req("Determine the metadata standards to apply", Met, "preservation events are PREMIS 3 (millctl evidence events --format premis-xml), with Library of Congress vocabularies"),
		notEvidenced("Find and fill gaps in the metadata against those standards", "Mill does not audit descriptive metadata"),
	}
	actions := req("Record preservation actions and when they occur", NotMet, "no event in the period", SourceEvents, SourceCheckpoint)
	switch {
	case f.Events > 0 && f.LogVerified:
		actions = req(actions.Text, Met, fmt.Sprintf("%d timed events in the period, in a signed log that verified", f.Events), SourceEvents, SourceCheckpoint)
	case f.Events > 0:
		actions = req(actions.Text, Partial, fmt.Sprintf("%d timed events in the period, but the log's verification named %d problems", f.Events, f.LogProblems), SourceEvents, SourceCheckpoint)
	}
	standards := req("Implement the metadata standards chosen", NotMet, "no event to export", SourceEvents)
	if f.Events > 0 {
		standards = req(standards.Text, Met, "the period's events export as PREMIS 3 XML", SourceEvents)
	}
	out[4] = []Requirement{actions, standards}
	return out
}
