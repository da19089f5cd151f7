package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// TestKeys: the verifier key derived from a signer key is the one
// GenerateKey made; the signer loads from an environment variable or a
// file only its owner can read.
func TestKeys(t *testing.T) {
	skey, vkey, err := GenerateKey("mill.test/keys")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "a b", "a+b", "a\x00b", "\xff", strings.Repeat("n", 300)} {
		if _, _, err := GenerateKey(bad); err == nil {
			t.Errorf("GenerateKey(%q) succeeded", bad)
		}
	}
	if got, err := VerifierKey(skey); err != nil || got != vkey {
		t.Fatalf("VerifierKey: %q, %v; want %q", got, err, vkey)
	}
	for _, bad := range []string{"", vkey, "PRIVATE+KEY+x+00000000+AAAA", strings.Replace(skey, "PRIVATE", "PUBLIC", 1)} {
		if _, err := VerifierKey(bad); err == nil {
			t.Errorf("VerifierKey(%q) succeeded", bad)
		}
	}
	env := map[string]string{"MILL_EVIDENCE_SIGNER_KEY": skey + "\n"}
	s, err := LoadSigner("", "MILL_EVIDENCE_SIGNER_KEY", func(k string) string { return env[k] })
	if err != nil || s.Name() != "mill.test/keys" {
		t.Fatalf("signer from env: %v", err)
	}
	if _, err := LoadSigner("", "UNSET", func(string) string { return "" }); err == nil {
		t.Error("no key: loaded")
	}
	f := filepath.Join(t.TempDir(), "signer.key")
	if err := os.WriteFile(f, []byte(skey+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSigner(f, "", nil); err == nil || !strings.Contains(err.Error(), "readable by others") {
		t.Errorf("a key file of mode 0644: %v", err)
	}
	if err := os.Chmod(f, 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err := LoadSigner(f, "", nil); err != nil || s.Name() != "mill.test/keys" {
		t.Errorf("a key file of mode 0600: %v", err)
	}
	vf := filepath.Join(t.TempDir(), "verifier.key")
	os.WriteFile(vf, []byte(vkey+"\n"), 0o644)
	if v, err := LoadVerifier(vf); err != nil || v.Name() != "mill.test/keys" {
		t.Errorf("LoadVerifier: %v", err)
	}
	if _, err := LoadVerifier(f); err == nil {
		t.Error("a signer key loaded as a verifier key")
	}
}

// TestOpenCheckpointRejects: a checkpoint must be the key's, of its
// origin, and in the checkpoint text shape.
func TestOpenCheckpointRejects(t *testing.T) {
	skey, v := testKey(t)
	s, _ := NewSigner(skey)
	otherName, _, _ := GenerateKey("mill.test/other")
	os2, _ := NewSigner(otherName)
	good, _ := signCheckpoint(s, 5, [32]byte{1})
	if cp, err := OpenCheckpoint(good.Signed, v); err != nil || cp.Size != 5 || cp.Root != [32]byte{1} {
		t.Fatalf("good checkpoint: %v", err)
	}
	foreign, _ := signCheckpoint(os2, 5, [32]byte{1})
	if _, err := OpenCheckpoint(foreign.Signed, v); err == nil {
		t.Error("another key's checkpoint opened")
	}
	root := "AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	for _, text := range []string{
		"evil.origin\n5\n" + root + "\n",
		s.Name() + "\n-1\n" + root + "\n",
		s.Name() + "\n05\n" + root + "\n",
		s.Name() + "\n5\nAAAA\n",
		s.Name() + "\n5\n" + root + "\nextension\n",
		s.Name() + "\n5\n",
	} {
		msg, err := note.Sign(&note.Note{Text: text}, s)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := OpenCheckpoint(msg, v); err == nil {
			t.Errorf("checkpoint %q opened", text)
		}
	}
}
