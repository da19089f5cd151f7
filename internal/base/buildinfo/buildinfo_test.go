package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestVersion(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}}
	for _, tc := range []struct {
		main string
		set  []debug.BuildSetting
		want string
	}{
		{"v1.4.0", rev, "v1.4.0"},
		{"(devel)", rev, "0123456789ab"},
		{"", rev, "0123456789ab"},
		{"(devel)", nil, "(devel)"},
		{"(devel)", []debug.BuildSetting{{Key: "vcs.revision", Value: "short"}}, "(devel)"},
	} {
		bi := &debug.BuildInfo{Main: debug.Module{Version: tc.main}, Settings: tc.set}
		if got := version(bi); got != tc.want {
			t.Errorf("version(%q, %v) = %q, want %q", tc.main, tc.set, got, tc.want)
		}
	}
}
