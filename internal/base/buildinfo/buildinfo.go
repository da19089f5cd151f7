// Package buildinfo reads the version a Mill binary was built as: what the
// fleet registry shows of a Workman and what its bit-log rows name as the
// agent of a check.
package buildinfo

import "runtime/debug"

// Version is the main module's version, or the first 12 characters of the
// VCS revision for a development build ("" when the binary records
// neither).
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	return version(bi)
}

func version(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 && (v == "" || v == "(devel)") {
			v = s.Value[:12]
		}
	}
	return v
}
