package evidence

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// The PREMIS 3 XML elements the export writes, in the schema's order.
type (
	premisDoc struct {
		XMLName xml.Name       `xml:"http://www.loc.gov/premis/v3 premis"`
		XSI     string         `xml:"xmlns:xsi,attr"`
		Version string         `xml:"version,attr"`
		Objects []premisObject `xml:"object"`
		Events  []premisEvent  `xml:"event"`
		Agents  []premisAgent  `xml:"agent"`
	}
	premisObject struct {
		Type       string        `xml:"xsi:type,attr"`
		Identifier idPair        `xml:"objectIdentifier"`
		Events     []linkedEvent `xml:"linkingEventIdentifier"`
	}
	idPair struct {
		Type  string `xml:"objectIdentifierType"`
		Value string `xml:"objectIdentifierValue"`
	}
	linkedEvent struct {
		Type  string `xml:"linkingEventIdentifierType"`
		Value string `xml:"linkingEventIdentifierValue"`
	}
	authorityValue struct {
		Authority    string `xml:"authority,attr,omitempty"`
		AuthorityURI string `xml:"authorityURI,attr,omitempty"`
		ValueURI     string `xml:"valueURI,attr,omitempty"`
		Value        string `xml:",chardata"`
	}
	premisEvent struct {
		Identifier struct {
			Type  string `xml:"eventIdentifierType"`
			Value string `xml:"eventIdentifierValue"`
		} `xml:"eventIdentifier"`
		Type     authorityValue `xml:"eventType"`
		DateTime string         `xml:"eventDateTime"`
		Detail   *struct {
			Detail    string           `xml:"eventDetail,omitempty"`
			Extension *fixityExtension `xml:"eventDetailExtension,omitempty"`
		} `xml:"eventDetailInformation,omitempty"`
		Outcome struct {
			Outcome authorityValue `xml:"eventOutcome"`
			Detail  *struct {
				Note      string           `xml:"eventOutcomeDetailNote"`
				Extension *fixityExtension `xml:"eventOutcomeDetailExtension,omitempty"`
			} `xml:"eventOutcomeDetail,omitempty"`
		} `xml:"eventOutcomeInformation"`
		Agent   linkedAgent    `xml:"linkingAgentIdentifier"`
		Objects []linkedObject `xml:"linkingObjectIdentifier"`
	}
	fixityExtension struct {
		Fixity struct {
			Algorithm  authorityValue `xml:"messageDigestAlgorithm"`
			Digest     string         `xml:"messageDigest"`
			Originator string         `xml:"messageDigestOriginator"`
		} `xml:"fixity"`
	}
	linkedAgent struct {
		Type  string         `xml:"linkingAgentIdentifierType"`
		Value string         `xml:"linkingAgentIdentifierValue"`
		Role  authorityValue `xml:"linkingAgentRole"`
	}
	linkedObject struct {
		Type  string         `xml:"linkingObjectIdentifierType"`
		Value string         `xml:"linkingObjectIdentifierValue"`
		Role  authorityValue `xml:"linkingObjectRole"`
	}
	premisAgent struct {
		Identifier struct {
			Type  string `xml:"agentIdentifierType"`
			Value string `xml:"agentIdentifierValue"`
		} `xml:"agentIdentifier"`
		Name    string         `xml:"agentName"`
		Type    authorityValue `xml:"agentType"`
		Version string         `xml:"agentVersion,omitempty"`
		Note    string         `xml:"agentNote,omitempty"`
	}
)

// The identifier types of the export (Mill's local identifiers).
const (
	idTypeEvent = "mill-event" // Event.ID
	idTypeItem  = "mill-item"  // account/space/content id
	idTypeCopy  = "mill-copy"  // account/store/space/content id
	idTypeAgent = "mill-agent"
)

// ItemID is the PREMIS identifier of a content item (all its copies):
// account/space/content id, each path-escaped.
func ItemID(c Copy) string {
	return url.PathEscape(c.Account) + "/" + url.PathEscape(c.Space) + "/" + url.PathEscape(c.ContentID)
}

// CopyID is the PREMIS identifier of one copy: account/store/space/content
// id, each path-escaped.
func CopyID(c Copy) string {
	return url.PathEscape(c.Account) + "/" + url.PathEscape(c.Store) + "/" + url.PathEscape(c.Space) + "/" + url.PathEscape(c.ContentID)
}

// AgentID is the PREMIS identifier of an agent:
// kind:name[/instance][@version], so one Workman instance running two
// Mill versions is two agents, each with its own agentVersion.
func AgentID(a Agent) string {
	id := string(a.Kind) + ":" + url.PathEscape(a.Name)
	if a.Instance != "" {
		id += "/" + url.PathEscape(a.Instance)
	}
	if a.Version != "" {
		id += "@" + url.PathEscape(a.Version)
	}
	return id
}

func av(t term, label string) authorityValue {
	a, au, v := t.authority()
	if label == "" {
		label = t.label
	}
	return authorityValue{Authority: a, AuthorityURI: au, ValueURI: v, Value: label}
}

// EncodePREMIS writes the events as one PREMIS 3 document: an
// intellectual entity object per content item (linking its events), the
// events, and their agents. Every event must be valid.
func EncodePREMIS(w io.Writer, events []*Event) error {
	doc := premisDoc{XSI: xsiNamespace, Version: premisSchemaVersion}
	items := map[string]int{}
	agents := map[string]bool{}
	for _, e := range events {
		if err := e.Validate(); err != nil {
			return err
		}
		item := ItemID(e.Object)
		i, ok := items[item]
		if !ok {
			i = len(doc.Objects)
			items[item] = i
			doc.Objects = append(doc.Objects, premisObject{Type: "intellectualEntity", Identifier: idPair{Type: idTypeItem, Value: item}})
		}
		doc.Objects[i].Events = append(doc.Objects[i].Events, linkedEvent{idTypeEvent, e.ID})
		doc.Events = append(doc.Events, premisEventOf(e))
		if id := AgentID(e.Agent); !agents[id] {
			agents[id] = true
			doc.Agents = append(doc.Agents, premisAgentOf(e.Agent))
		}
	}
	if len(doc.Objects) == 0 {
		return fmt.Errorf("evidence: PREMIS: no events (a PREMIS document needs an object)")
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("evidence: PREMIS: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func premisEventOf(e *Event) premisEvent {
	var p premisEvent
	p.Identifier.Type, p.Identifier.Value = idTypeEvent, e.ID
	p.Type = av(eventTypes[e.Type], "")
	p.DateTime = e.Time
	var detail []string
	if e.Type == Repair {
		detail = append(detail, "repair: the copy was replaced by a replication from a good copy")
	}
	if e.Rule != "" {
		detail = append(detail, "authorised by: "+e.Rule)
	}
	if e.Detail != "" {
		detail = append(detail, e.Detail)
	}
	if len(detail) > 0 || (e.Fixity != nil && e.Fixity.Expected != "") {
		p.Detail = &struct {
			Detail    string           `xml:"eventDetail,omitempty"`
			Extension *fixityExtension `xml:"eventDetailExtension,omitempty"`
		}{Detail: strings.Join(detail, "; ")}
		if e.Fixity != nil && e.Fixity.Expected != "" {
			p.Detail.Extension = fixityOf(e.Fixity.Algorithm, e.Fixity.Expected, "Mill: the digest recorded for the item (expected)")
		}
	}
	p.Outcome.Outcome = av(outcomes[e.Outcome], "")
	if f := e.Fixity; f != nil {
		note := fmt.Sprintf("%s digest %s", algorithms[f.Algorithm].label, orNone(f.Digest))
		if f.Expected != "" {
			note += fmt.Sprintf(", expected %s", f.Expected)
		}
		p.Outcome.Detail = &struct {
			Note      string           `xml:"eventOutcomeDetailNote"`
			Extension *fixityExtension `xml:"eventOutcomeDetailExtension,omitempty"`
		}{Note: note}
		if f.Digest != "" {
			orig := "Mill: the copy's bytes read back and hashed"
			if f.Method == MethodAtRest {
				orig = "the storage provider: a checksum computed at rest"
			}
			p.Outcome.Detail.Extension = fixityOf(f.Algorithm, f.Digest, orig)
		}
	}
	p.Agent = linkedAgent{Type: idTypeAgent, Value: AgentID(e.Agent), Role: av(agentRoles[e.Agent.Kind], "")}
	if e.Source != nil {
		p.Objects = append(p.Objects, linkedObject{Type: idTypeCopy, Value: CopyID(*e.Source), Role: av(roleSource, "")})
	}
	role := roleOutcome
	if e.Type == FixityCheck || e.Type == Deletion {
		role = roleSource // the copy checked or deleted is the event's input
	}
	p.Objects = append(p.Objects, linkedObject{Type: idTypeCopy, Value: CopyID(e.Object), Role: av(role, "")})
	return p
}

func fixityOf(a Algorithm, digest, originator string) *fixityExtension {
	var x fixityExtension
	x.Fixity.Algorithm = av(algorithms[a], "")
	x.Fixity.Digest = digest
	x.Fixity.Originator = originator
	return &x
}

func premisAgentOf(a Agent) premisAgent {
	var p premisAgent
	p.Identifier.Type, p.Identifier.Value = idTypeAgent, AgentID(a)
	p.Name = a.Name
	p.Type = av(agentTypes[a.Kind], "")
	p.Version = a.Version
	if a.Instance != "" {
		p.Note = "instance: " + a.Instance
	}
	return p
}

func orNone(s string) string {
	if s == "" {
		return "none (the copy could not be read)"
	}
	return s
}
