package task

import "testing"

// TestRunIDBothFormats: a DUP's run ID travels in both wire formats, and a
// Java message without one still decodes (no run).
func TestRunIDBothFormats(t *testing.T) {
	d := Dup{Account: "acme", StoreID: "1", DestStoreID: "2", SpaceID: "photos", ContentID: "a.jpg", RunID: "20260501T030000Z"}
	for _, f := range []Format{FormatJSON, FormatProperties} {
		b, err := Encode(d.Task(), f)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DupFrom(back)
		if err != nil || got.RunID != d.RunID || back.RunID() != d.RunID || len(got.Extra) != 0 {
			t.Errorf("%v: %+v %v, want run %s as a known property", f, got, err, d.RunID)
		}
	}
	java := "#Fri Mar 05 14:07:09 UTC 2024\ntype=DUP\naccount=acme\nstoreId=1\ndestStoreId=2\nspaceId=photos\ncontentId=a.jpg\n"
	tk, err := Decode([]byte(java))
	if err != nil {
		t.Fatal(err)
	}
	got, err := DupFrom(tk)
	if err != nil || got.RunID != "" || tk.RunID() != "" {
		t.Fatalf("Java DUP without a run: %+v %v", got, err)
	}
}
