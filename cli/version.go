package cli

import (
	"regexp"
	"runtime/debug"
)

// Revision is the commit a release was built from, set at build time with
// -ldflags "-X github.com/hookback/hookback/cli.Revision=..." (.goreleaser.yaml):
// a build in a git worktree, or with -buildvcs=false, records none.
var Revision = ""

// buildInfo is what this build calls itself: its version and, when known,
// the commit it was built from.
type buildInfo struct {
	Version  string
	Revision string
	// Modified: built from a tree with uncommitted changes.
	Modified bool
}

// version is what this build calls itself: Version when the build set it
// (make, the image, a release), else what the go command recorded, so that
// `go install github.com/hookback/hookback@v1.2.0` reports v1.2.0 (and
// defaults to that release's image) rather than "dev".
func version() string {
	return currentBuild().Version
}

// currentBuild reads Version, Revision and the go command's build info.
func currentBuild() buildInfo {
	bi, _ := debug.ReadBuildInfo()
	return readBuild(Version, Revision, bi)
}

// readBuild combines what ldflags set (version, revision; "dev" and "" when
// unset) with the go command's record (bi, nil when there is none). The
// revision comes from -X, else from the VCS stamp of a build in a clone,
// else from the pseudo-version `go install module@<branch or commit>`
// records (a tagged version names its commit already).
func readBuild(version, revision string, bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: version, Revision: revision}
	if bi == nil {
		return b
	}
	if b.Version == "dev" {
		b.Version = moduleVersion(bi.Main.Version)
	}
	if b.Revision != "" {
		return b
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	if b.Revision == "" {
		if m := pseudoVersion.FindStringSubmatch(bi.Main.Version); m != nil {
			b.Revision = m[1]
		}
	}
	return b
}

// String is the `hookback version` line: "hookback v1.2.0", with
// " (revision <commit>[, modified])" when the commit is known.
func (b buildInfo) String() string {
	s := "hookback " + b.Version
	switch {
	case b.Revision != "" && b.Modified:
		s += " (revision " + b.Revision + ", modified)"
	case b.Revision != "":
		s += " (revision " + b.Revision + ")"
	}
	return s
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
// the 12-hex commit prefix (v0.0.0-20261123055517-0ea58dc0ffee), with the
// +dirty a build from a modified clone adds.
var pseudoVersion = regexp.MustCompile(`[-.]\d{14}-([0-9a-f]{12})(?:\+dirty)?$`)
