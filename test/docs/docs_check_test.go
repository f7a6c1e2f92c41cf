package docs

import (
	"strings"
	"testing"
)

// TestDocCheckRules runs the reference check on sample text: what it must
// flag, and the URLs, shell lines, other modules' names and prose it must
// leave alone.
func TestDocCheckRules(t *testing.T) {
	idx := newRepoIndex(t)
	cases := []struct {
		name, text string
		want       string // a substring of the one problem, or "" for none
	}{
		{"existing doc path", "see docs/tunnel.md and hack/bench-cluster", ""},
		{"missing doc path", "see docs/gone.md", "docs/gone.md"},
		{"missing test file", "run by test/e2e/help_examples_test.go", "test/e2e/help_examples_test.go"},
		{"URL tail", "https://github.com/hookback/hookback/blob/main/docs/gone.md", ""},
		{"Go import path", "import `github.com/hookback/hookback/admission`", ""},
		{"relative shell path", "```sh\ncd bench && go test ./cluster/ ./...\n```", ""},
		{"API group in prose", "admission/v1 reviews and record/replay", ""},
		{"placeholder and glob", "testdata/golden/NAME.yaml, namespaces hookback-bench-*, testdata/webhook/<name>/", ""},
		{"link", "[server](server.md)", ""},
		{"missing link", "[gone](gone.md)", "gone.md"},
		{"link to a heading", "[t](tunnel.md#the-relay-gone)", "no such heading"},
		{"make target", "`make unit` and `HOOKBACK_KEEP_CLUSTER=1 make e2e`", ""},
		{"missing make target", "`make everything`", "make everything"},
		{"make in prose", "to make sure it works", ""},
		{"test name", "TestHelpExamplesRun and BenchmarkAdmission", ""},
		{"missing test name", "TestNothingLikeThis", "TestNothingLikeThis"},
		{"hookback identifier", "`admission.Request.DecodeObject` and `session.Run`", ""},
		{"missing hookback identifier", "`session.Gone`", "session.Gone"},
		{"missing member", "`admission.Request.Gone`", "admission.Request.Gone"},
		{"other module's package", "`strconv.ParseBool`, `rest.InClusterConfig`, `*cli.Context`", ""},
		{"section of a document", `docs/tunnel.md, "When the tunnel drops"`, ""},
		{"missing section", `docs/tunnel.md, "No such heading"`, "No such heading"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := idx.check("docs/probe.md", c.text)
			switch {
			case c.want == "" && len(got) > 0:
				t.Errorf("flagged %q: %v", c.text, got)
			case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
				t.Errorf("check(%q) = %v, want one problem naming %q", c.text, got, c.want)
			}
		})
	}
}
