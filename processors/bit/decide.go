package bit

// Checksums are what one check observed of an item (see the package doc).
// An empty string is a null value.
type Checksums struct {
	// Found: the item exists in storage. When false, Content and Storage
	// are ignored (both "404").
	Found bool
	// ContentRead: the bytes were read and Content is their MD5; false
	// means C is N/A.
	ContentRead bool
	Content     string // C
	Storage     string // S ("" when the provider reported none)
	Index       string // I
	Audit       string // A
	// Claim (R) is the MD5 Mill recorded with the copy when it wrote it
	// (S3 metadata "mill-md5", an fs sidecar; storage.CopyChecksum.Claim);
	// "" when none. It takes part only where it differs from S: it is
	// usually S itself, or the S the observation chose because it
	// contradicts the bytes.
	Claim string
}

// values returns C, S, I, A as they take part in the comparison: C only
// when read, C and S only when found.
func (c Checksums) values() (cv, sv, iv, av string) {
	if c.Found {
		if c.ContentRead {
			cv = c.Content
		}
		sv = c.Storage
	}
	return cv, sv, c.Index, c.Audit
}

// claim returns R when it takes part: found, and other than S.
func (c Checksums) claim() string {
	if c.Found && c.Claim != c.Storage {
		return c.Claim
	}
	return ""
}

// Consensus returns the checksum held by the most of the non-null values
// among C, S, I, A and R (R only where it differs from S), ties broken in
// the order S, I, A, R, C; "" when all are null.
func (c Checksums) Consensus() string {
	cv, sv, iv, av := c.values()
	order := []string{sv, iv, av, c.claim(), cv} // tie-break order
	best, bestN := "", 0
	for _, v := range order {
		if v == "" {
			continue
		}
		n := 0
		for _, w := range order {
			if w == v {
				n++
			}
		}
		if n > bestN { // strictly more: an earlier value keeps a tie
			best, bestN = v, n
		}
	}
	return best
}

// Decide classifies c into one of the 11 cases of the decision table with
// the procedure in the package doc. It is total: every Checksums has
// exactly one case.
func Decide(c Checksums) int {
	cv, sv, iv, av := c.values()
	// Rules 1 and 2: not in storage.
	if !c.Found {
		if iv == "" && av == "" {
			return 11
		}
		return 8
	}
	if !c.ContentRead {
		// Rule 3: nothing of the storage side to check.
		if sv == "" {
			return 4
		}
		// Rule 4: both records agree with each other, not with S.
		if iv != "" && iv == av && iv != sv {
			return 4
		}
		// Rule 5: the provider's digest contradicts Mill's claim.
		if c.claim() != "" {
			return 4
		}
	}
	// Rule 6: the bytes disagree with the storage side.
	if c.ContentRead && sv != "" && cv != sv {
		if c.Consensus() == cv {
			return 3
		}
		return 2
	}
	// Rule 7: the storage side agrees with itself.
	x := sv
	if x == "" {
		x = cv
	}
	switch {
	case iv == x && av == x:
		return 1
	case iv == x && av == "":
		return 7
	case iv == x:
		return 6
	case av == x:
		return 5
	case iv == "" && av == "":
		return 9
	default:
		return 10
	}
}

// Waits reports whether a case waits and re-checks (RecheckDelay) before
// its final outcome: cases 4, 8, 9 and 10.
func Waits(caseNumber int) bool {
	switch caseNumber {
	case 4, 8, 9, 10:
		return true
	}
	return false
}
