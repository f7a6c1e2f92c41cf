package cli

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// version is what this build calls itself: Version when the build set it
// (make, the image, a release), else what the go command recorded, so that
// `go install github.com/hookback/hookback@v1.2.0` reports v1.2.0 (and
// defaults to that release's image) rather than "dev".
func version() string {
	if Version != "dev" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		return moduleVersion(bi.Main.Version)
	}
	return Version
}

// moduleVersion turns the main module's recorded version into one
// version() reports: "(devel)" and "" (test binaries, builds without VCS
// information) are "dev".
func moduleVersion(v string) string {
	if v == "" || v == "(devel)" {
		return "dev"
	}
	return v
}

// pseudoVersion matches a Go pseudo-version's tail: the commit time and
// the 12-hex commit prefix (v0.0.0-20261123055517-0ea58dc0ffee).
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-[0-9a-f]{12}$`)

// defaultImage is the released image of this build. The release workflow
// pushes ghcr.io/hookback/hookback:<git describe> for every tag and every
// commit on main, and :latest for main. A build from a tree with
// uncommitted changes runs the image of its commit (it has none of its
// own); a dev build, or a go-command pseudo-version, runs :latest.
func defaultImage(version string) string {
	v := strings.TrimSuffix(strings.TrimSuffix(version, "+dirty"), "-dirty")
	if v == "" || v == "dev" || pseudoVersion.MatchString(v) {
		return "ghcr.io/hookback/hookback:latest"
	}
	return "ghcr.io/hookback/hookback:" + v
}
