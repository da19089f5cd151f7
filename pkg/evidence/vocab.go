package evidence

// The Library of Congress preservation vocabularies
// (https://id.loc.gov/vocabulary/preservation.html) Mill's PREMIS export
// uses: each term's label and URI.
const (
	locBase = "http://id.loc.gov/vocabulary/preservation/"

	vocabEventType      = "eventType"
	vocabEventOutcome   = "eventOutcome"
	vocabAgentType      = "agentType"
	vocabAgentRole      = "eventRelatedAgentRole"
	vocabObjectRole     = "eventRelatedObjectRole"
	vocabHashFunctions  = "cryptographicHashFunctions"
	localAuthority      = "mill" // Mill's local terms (no LoC term exists)
	premisNamespace     = "http://www.loc.gov/premis/v3"
	xsiNamespace        = "http://www.w3.org/2001/XMLSchema-instance"
	premisSchemaVersion = "3.0"
)

// term is one vocabulary term: its label, and its code in the LoC
// vocabulary ("" for a local term, which has no URI).
type term struct{ vocab, label, code string }

// authority is the PREMIS authority attributes of the term.
func (t term) authority() (authority, authorityURI, valueURI string) {
	if t.code == "" {
		return localAuthority, "", ""
	}
	return t.vocab, locBase + t.vocab, locBase + t.vocab + "/" + t.code
}

// eventTypes maps Mill's event types to LoC eventType terms. A repair is
// a replication (from the good copy) whose eventDetail says "repair".
var eventTypes = map[EventType]term{
	FixityCheck: {vocabEventType, "fixity check", "fix"},
	Replication: {vocabEventType, "replication", "rep"},
	Repair:      {vocabEventType, "replication", "rep"},
	Deletion:    {vocabEventType, "deletion", "del"},
}

var outcomes = map[Outcome]term{
	Success: {vocabEventOutcome, "success", "suc"},
	Failure: {vocabEventOutcome, "fail", "fai"},
	Warning: {vocabEventOutcome, "warning", "war"},
}

var agentTypes = map[AgentKind]term{
	Software: {vocabAgentType, "software", "sof"},
	Person:   {vocabAgentType, "person", "per"},
}

// agentRoles: software executes the action; a person implements it.
var agentRoles = map[AgentKind]term{
	Software: {vocabAgentRole, "executing program", "exe"},
	Person:   {vocabAgentRole, "implementer", "imp"},
}

var (
	roleSource  = term{vocabObjectRole, "source", "sou"}
	roleOutcome = term{vocabObjectRole, "outcome", "out"}
)

// algorithms maps digest algorithms to LoC cryptographicHashFunctions
// terms; CRC-64/NVME is a local term beside them.
var algorithms = map[Algorithm]term{
	MD5:       {vocabHashFunctions, "MD5", "md5"},
	SHA256:    {vocabHashFunctions, "SHA-256", "sha256"},
	CRC64NVME: {vocabHashFunctions, "CRC-64/NVME", ""},
}
