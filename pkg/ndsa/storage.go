package ndsa

import (
	"fmt"
	"slices"
)

// complete returns the space's complete copies: those holding as many
// items as the fullest copy (and at least one).
func complete(sp Space) []Copy {
	var most int64
	for _, c := range sp.Copies {
		most = max(most, c.Items)
	}
	var out []Copy
	for _, c := range sp.Copies {
		if most > 0 && c.Items == most {
			out = append(out, c)
		}
	}
	return out
}

// distinct counts the distinct non-empty values of field among copies.
func distinct(cs []Copy, field func(Copy) string) int {
	var seen []string
	for _, c := range cs {
		if v := field(c); v != "" && !slices.Contains(seen, v) {
			seen = append(seen, v)
		}
	}
	return len(seen)
}

func region(c Copy) string     { return c.Region }
func threatZone(c Copy) string { return c.ThreatZone }
func provider(c Copy) string   { return c.Provider }
func media(c Copy) string      { return c.Media }
func store(c Copy) string      { return c.Store }

// perSpace judges every space with judge (a verdict and, when it is not
// met, why) and sums them up: met when every space's is, not met when
// none is met or partial, partial otherwise; the reason names the spaces
// that fall short.
func perSpace(f Facts, what string, judge func(sp Space, cs []Copy) (Verdict, string)) (Verdict, string) {
	if len(f.Spaces) == 0 {
		return NotMet, "no space has a copy in the content index"
	}
	var short []string
	var met, notMet int
	for _, sp := range f.Spaces {
		v, why := judge(sp, complete(sp))
		switch v {
		case Met:
			met++
			continue
		case NotMet:
			notMet++
		}
		short = append(short, fmt.Sprintf("%s/%s (%s)", sp.Account, sp.Space, why))
	}
	n := len(f.Spaces)
	switch {
	case met == n:
		return Met, fmt.Sprintf("every space (%d) has %s", n, what)
	case notMet == n:
		return NotMet, fmt.Sprintf("no space has %s: %s", what, list(short))
	}
	return Partial, fmt.Sprintf("%d of %d spaces have %s; not: %s", met, n, what, list(short))
}

// atLeast is a judge: at least n complete copies that differ in field
// (field nil: in their store).
func atLeast(n int, field func(Copy) string, noun string) func(Space, []Copy) (Verdict, string) {
	if field == nil {
		field = store
	}
	return func(_ Space, cs []Copy) (Verdict, string) {
		if got := distinct(cs, field); got < n {
			unknown := 0
			for _, c := range cs {
				if field(c) == "" {
					unknown++
				}
			}
			why := fmt.Sprintf("%d complete copies in %d %s", len(cs), got, noun)
			if unknown > 0 {
				why += fmt.Sprintf(", %d with none set", unknown)
			}
			return NotMet, why
		}
		return Met, ""
	}
}

// both is a judge met when a and b are, partial when one is.
func both(a, b func(Space, []Copy) (Verdict, string)) func(Space, []Copy) (Verdict, string) {
	return func(sp Space, cs []Copy) (Verdict, string) {
		va, wa := a(sp, cs)
		vb, wb := b(sp, cs)
		switch {
		case va == Met && vb == Met:
			return Met, ""
		case va == Met:
			return Partial, wb
		case vb == Met:
			return Partial, wa
		}
		return NotMet, wa + "; " + wb
	}
}

// all is a judge met when a and b are, not met otherwise (one statement
// with two conditions: three copies held in one region are not three
// copies one of which is elsewhere).
func all(a, b func(Space, []Copy) (Verdict, string)) func(Space, []Copy) (Verdict, string) {
	return func(sp Space, cs []Copy) (Verdict, string) {
		if v, why := both(a, b)(sp, cs); v != Met {
			return NotMet, why
		}
		return Met, ""
	}
}

func storage(f Facts) [5][]Requirement {
	var out [5][]Requirement
	copies := func(text, what string, judge func(Space, []Copy) (Verdict, string)) Requirement {
		v, why := perSpace(f, what, judge)
		return req(text, v, why, SourceCopies)
	}
	documented := func(_ Space, cs []Copy) (Verdict, string) {
		var missing int
		for _, c := range cs {
			if c.Provider == "" || c.Media == "" {
				missing++
			}
		}
		if missing > 0 {
			return Partial, fmt.Sprintf("%d copies on stores without a provider", missing)
		}
		return Met, ""
	}
	out[1] = []Requirement{
		copies("Two complete copies in separate locations", "two complete copies in two stores", atLeast(2, nil, "stores")),
		copies("Document all storage media where content is stored", "every copy's provider and storage kind documented", documented),
		notEvidenced("Put content into stable storage", "copies.json names each store's kind and provider; whether that storage is stable is the organisation's judgement"),
	}
	out[2] = []Requirement{
		copies("Three complete copies, at least one in a separate geographic location", "three complete copies in at least two regions",
			all(atLeast(3, nil, "stores"), atLeast(2, region, "regions"))),
		notEvidenced("Document storage and media with the resources and dependencies they need", "copies.json names providers, regions and storage kinds; the dependencies they need are documented outside Mill"),
	}
	out[3] = []Requirement{
		copies("At least one copy in a location with a different disaster threat", "complete copies in at least two threat zones", atLeast(2, threatZone, "threat zones")),
		copies("At least one copy on a different storage media type", "complete copies on at least two media types", atLeast(2, media, "media types")),
		notEvidenced("Track the obsolescence of storage and media", "Mill does not track storage obsolescence"),
	}
	out[4] = []Requirement{
		copies("At least three copies, each in a location with a different disaster threat", "three complete copies in three threat zones", atLeast(3, threatZone, "threat zones")),
		copies("Maximise storage diversification (no single point of failure)", "complete copies with at least two providers and two media types",
			both(atLeast(2, provider, "providers"), atLeast(2, media, "media types"))),
		notEvidenced("Plan and act on the obsolescence of storage hardware, software and media", "a plan is the organisation's; Mill does not hold it"),
	}
	return out
}
