package evidence

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/millfleet/mill/internal/testkit/testenv"
)

// TestPREMISValidates: the export of one event of each type is valid
// against the PREMIS 3 schema (xmllint --schema), and carries the LoC
// vocabulary terms.
func TestPREMISValidates(t *testing.T) {
	var buf bytes.Buffer
	if err := EncodePREMIS(&buf, sampleEvents()); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventType/fix">fixity check</eventType>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventType/rep">replication</eventType>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventType/del">deletion</eventType>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/cryptographicHashFunctions/md5">MD5</messageDigestAlgorithm>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/cryptographicHashFunctions/sha256">SHA-256</messageDigestAlgorithm>`,
		`<messageDigestAlgorithm authority="mill">CRC-64/NVME</messageDigestAlgorithm>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventOutcome/fai">fail</eventOutcome>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/agentType/per">person</agentType>`,
		`valueURI="http://id.loc.gov/vocabulary/preservation/eventRelatedObjectRole/sou">source</linkingObjectRole>`,
		`authorised by: operator request &lt;ticket &amp; 42&gt;`,
		`repair: the copy was replaced by a replication from a good copy`,
		`<linkingObjectIdentifierValue>acme/s3-east/photos/dir%2Fitem-1.tif</linkingObjectIdentifierValue>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %s", want)
		}
	}
	if err := xml.Unmarshal(buf.Bytes(), new(struct{})); err != nil {
		t.Fatalf("not well-formed: %v", err)
	}
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		testenv.Unavailable(t, "xmllint (Debian package libxml2-utils; localstack/up.sh installs it)", err)
		return
	}
	doc := filepath.Join(t.TempDir(), "events.xml")
	if err := os.WriteFile(doc, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	schema := filepath.Join("testdata", "premis", "premis-v3-0.xsd")
	if msg, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", schema, doc).CombinedOutput(); err != nil {
		t.Fatalf("xmllint: %v\n%s\n%s", err, msg, out)
	}
	// The schema check is real: a document breaking it fails.
	bad := strings.Replace(out, "<eventDateTime>", "<eventDate>", 1)
	bad = strings.Replace(bad, "</eventDateTime>", "</eventDate>", 1)
	if err := os.WriteFile(doc, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if msg, err := exec.Command(xmllint, "--noout", "--nonet", "--schema", schema, doc).CombinedOutput(); err == nil {
		t.Fatalf("xmllint passed an invalid document:\n%s", msg)
	}
}

// TestPREMISNoEvents: an empty export is an error (PREMIS needs an
// object), as is an invalid event.
func TestPREMISRejects(t *testing.T) {
	if err := EncodePREMIS(new(bytes.Buffer), nil); err == nil {
		t.Error("an empty export succeeded")
	}
	e := fixityEvent(1)
	e.Type = "migration"
	if err := EncodePREMIS(new(bytes.Buffer), []*Event{e}); err == nil {
		t.Error("an invalid event was exported")
	}
}
