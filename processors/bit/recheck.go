package bit

import (
	"regexp"
	"strconv"
)

// recheckForm is the form of the KeyRecheckOf values the bit-error
// processor writes: "case 2: repaired from store 2", "case 6: audit log
// re-synced from storage".
var recheckForm = regexp.MustCompile(`^case [248]: repaired from store [!-:<-~]{1,64}$|^case 6: audit log re-synced from storage$`)

// RecheckNote is what a check adds to its row's details for a task's
// KeyRecheckOf value. The value is part of a message, which anyone who can
// send to the bit queue can write: a value of the form the bit-error
// processor writes is kept ("; re-check after case 2: repaired from store
// 2"), any other is left out and named as such, so no text of a message's
// choosing reaches the bit log.
func RecheckNote(why string) string {
	switch {
	case why == "":
		return ""
	case recheckForm.MatchString(why):
		return "; re-check after " + why
	}
	return "; re-check (its stated reason is not one Mill writes: left out)"
}

// RecheckCase is the case of the finding a task's KeyRecheckOf value says
// it re-checks (2, 4, 6 or 8), in the form the bit-error processor writes
// only; 0 for any other value. It is the row's bitlog.Row.Supersedes: the
// re-check replaces the run's finding of that case, and only that one.
func RecheckCase(why string) int {
	if !recheckForm.MatchString(why) {
		return 0
	}
	n, _ := strconv.Atoi(why[len("case ") : len("case ")+1])
	return n
}
