package cli

import (
	"runtime/debug"
	"testing"
)

// TestReadBuild covers each way a binary is built: make and the image
// (-X Version), a release (-X Version and Revision), go build in a clone
// (VCS stamp), go install module@version (tag or pseudo-version), go run
// or a worktree (nothing recorded).
func TestReadBuild(t *testing.T) {
	const commit = "5a6bacf16d731508dc05186ebb77d7cee4882390"
	stamped := func(mainVersion string, settings ...string) *debug.BuildInfo {
		bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/hookback/hookback", Version: mainVersion}}
		for i := 0; i+1 < len(settings); i += 2 {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
		}
		return bi
	}
	tests := []struct {
		name              string
		version, revision string
		bi                *debug.BuildInfo
		want              string
	}{
		{"no build info", "dev", "", nil, "hookback dev"},
		{"go run or a worktree", "dev", "", stamped("(devel)"), "hookback dev"},
		{"release", "v1.2.0", commit, stamped("(devel)"), "hookback v1.2.0 (revision " + commit + ")"},
		{"release snapshot in a clone: -X wins", "v0.0.0-SNAPSHOT-5a6bacf", commit,
			stamped("v0.0.0-20261125124739-5a6bacf16d73+dirty", "vcs.revision", "0000000000000000000000000000000000000000", "vcs.modified", "true"),
			"hookback v0.0.0-SNAPSHOT-5a6bacf (revision " + commit + ")"},
		{"make in a clone", "5a6bacf-dirty", "",
			stamped("v0.0.0-20261125124739-5a6bacf16d73+dirty", "vcs", "git", "vcs.revision", commit, "vcs.modified", "true"),
			"hookback 5a6bacf-dirty (revision " + commit + ", modified)"},
		{"go build in a clean clone", "dev", "",
			stamped("v0.0.0-20261125124739-5a6bacf16d73", "vcs", "git", "vcs.revision", commit, "vcs.modified", "false"),
			"hookback v0.0.0-20261125124739-5a6bacf16d73 (revision " + commit + ")"},
		{"go install at a tag", "dev", "", stamped("v1.2.0"), "hookback v1.2.0"},
		{"go install at a commit", "dev", "", stamped("v1.2.1-0.20261125124739-5a6bacf16d73"),
			"hookback v1.2.1-0.20261125124739-5a6bacf16d73 (revision 5a6bacf16d73)"},
		{"go install at a commit before any tag", "dev", "", stamped("v0.0.0-20261125124739-5a6bacf16d73"),
			"hookback v0.0.0-20261125124739-5a6bacf16d73 (revision 5a6bacf16d73)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readBuild(tt.version, tt.revision, tt.bi).String(); got != tt.want {
				t.Errorf("readBuild(%q, %q) = %q, want %q", tt.version, tt.revision, got, tt.want)
			}
		})
	}
}

// TestVersionCommand: `hookback version` of a test binary, which records
// no version, says dev and still succeeds.
func TestVersionCommand(t *testing.T) {
	out, _, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if want := currentBuild().String() + "\n"; out != want {
		t.Errorf("hookback version printed %q, want %q", out, want)
	}
}
