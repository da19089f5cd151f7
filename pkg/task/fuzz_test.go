package task

import (
	"os"
	"path/filepath"
	"testing"
)

// addGoldenSeeds adds every file of testdata/messages to f's corpus.
func addGoldenSeeds(f *testing.F) [][]byte {
	f.Helper()
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	var bodies [][]byte
	for _, p := range paths {
		if filepath.Ext(p) != ".json" && filepath.Ext(p) != ".properties" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		bodies = append(bodies, b)
	}
	if len(bodies) == 0 {
		f.Fatal("no golden messages to seed the corpus")
	}
	return bodies
}

func FuzzDecode(f *testing.F) {
	for _, b := range addGoldenSeeds(f) {
		f.Add(b)
	}
	for _, s := range []string{
		"type=X\nk=\\ud83d\\ude00\\\n  more\r\n", "type=X\nk=\\ud83d", "{\"v\":1,\"type\":\"X\"}", "{", "",
		"type=X\nattempts=9999999999999999999\n", "type=X\n\\u0041\\ b=c", "type=\\\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := Decode(b)
		if err != nil {
			return
		}
		if tk.Type == "" || tk.Props == nil || tk.Attempts < 0 {
			t.Fatalf("Decode(%q) = %#v: empty type, nil props or negative attempts", b, tk)
		}
		for _, f := range []Format{FormatJSON, FormatProperties} {
			enc, err := testOpts.Encode(tk, f)
			if err != nil {
				t.Fatalf("Encode(%v) of decoded %q: %v", f, b, err)
			}
			if !sqsSafe(enc) {
				t.Fatalf("Encode(%v) output is not SQS-safe: %q", f, enc)
			}
			if DetectFormat(enc) != f {
				t.Fatalf("Encode(%v) output detected as %v: %q", f, DetectFormat(enc), enc)
			}
			back, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode(Encode(%v)) of %q: %v\n%q", f, b, err, enc)
			}
			if !sameTask(back, tk) {
				t.Fatalf("%v round trip of %q:\n got %#v\nwant %#v", f, b, back, tk)
			}
		}
		viewRoundTrip(tk) // must not panic; errors are fine
	})
}

func FuzzRoundTrip(f *testing.F) {
	for _, b := range addGoldenSeeds(f) {
		if tk, err := Decode(b); err == nil {
			for k, v := range tk.Props {
				f.Add(string(tk.Type), tk.Attempts, k, v, "")
				break
			}
		}
	}
	f.Add("DUP", 0, "k ey", " v=:#!\\\n\r\t\f", "\x00\uFFFE")
	f.Add("BIT", 3, "", "", "😀 文件")
	f.Fuzz(func(t *testing.T, typ string, attempts int, k, v, v2 string) {
		tk := &Task{Type: Type(typ), Attempts: attempts, Props: map[string]string{k: v, k + "2": v2, "fixed": v + v2}}
		for _, f := range []Format{FormatJSON, FormatProperties} {
			enc, err := testOpts.Encode(tk, f)
			if err != nil {
				if checkEncodable(tk) == nil {
					t.Fatalf("Encode(%v, %#v) failed though the task is encodable: %v", f, tk, err)
				}
				return // an unencodable task: empty type, bad UTF-8, reserved key, negative attempts
			}
			if !sqsSafe(enc) {
				t.Fatalf("Encode(%v) output is not SQS-safe: %q", f, enc)
			}
			back, err := Decode(enc)
			if err != nil {
				t.Fatalf("Decode(Encode(%v, %#v)): %v\n%q", f, tk, err, enc)
			}
			if !sameTask(back, tk) {
				t.Fatalf("%v round trip:\n got %#v\nwant %#v\n%q", f, back, tk, enc)
			}
		}
	})
}
