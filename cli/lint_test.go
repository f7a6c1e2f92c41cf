package cli

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintExitStatus: 0 clean (or below --fail-on), 1 at or above it,
// 2 on bad input, each with a message that says what to do.
func TestLintExitStatus(t *testing.T) {
	td := func(f string) string { return filepath.Join("..", "lint", "testdata", f) }
	probe := filepath.Join("..", "testdata", "probe", "mutating-webhooks.yaml")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	cases := []struct {
		name   string
		args   []string
		exit   string
		stderr string
		stdout string
	}{
		{"an error fails", []string{td("self-deadlock.yaml")}, "exit 1", "1 at or above --fail-on error", "self-deadlock"},
		{"a warning passes by default", []string{td("review-versions.yaml")}, "", "0 errors, 1 warnings", "review-versions"},
		{"a warning fails at --fail-on warning", []string{td("review-versions.yaml"), "--fail-on", "warning"}, "exit 1", "1 at or above --fail-on warning", ""},
		{"disabled", []string{td("self-deadlock.yaml"), "--disable", "self-deadlock"}, "", "0 findings", "no findings"},
		{"suppressed", []string{td("self-deadlock-ignored.yaml")}, "", "1 more suppressed by hookback.dev/lint-ignore", "SUPPRESSED"},
		{"fail on none", []string{td("self-deadlock.yaml"), "--fail-on", "none"}, "", "1 errors", ""},
		{"unknown rule", []string{td("self-deadlock.yaml"), "--disable", "deadlock"}, "exit 2", `--disable "deadlock": no such rule; the rules are self-deadlock`, ""},
		{"unknown severity", []string{td("self-deadlock.yaml"), "--fail-on", "fatal"}, "exit 2", `--fail-on "fatal": want error, warning, info or none`, ""},
		{"unknown format", []string{td("self-deadlock.yaml"), "-o", "xml"}, "exit 2", `--output "xml": want one of table, json, junit, sarif`, ""},
		{"missing file", []string{td("nope.yaml")}, "exit 2", "nope.yaml", ""},
		{"nothing to lint", []string{td("no-admission.yaml")}, "exit 2", "no webhook configuration, admission policy or binding to lint", ""},
		{"a policy and its binding", []string{filepath.Join("..", "policy", "testdata", "basic", "policy.yaml")}, "", "0 findings", "no findings"},
		{"a binding without Deny", []string{td("policy-validation-actions.yaml")}, "", "1 warnings", "validation-actions"},
		{"upstream without probe", []string{probe, "--upstream", "http://127.0.0.1:1"}, "exit 2", "--upstream is for --probe: add --probe", ""},
		{"probe of a bad upstream", []string{probe, "--probe", "--upstream", "ftp://127.0.0.1"}, "exit 2", `--upstream "ftp://127.0.0.1": want an http or https URL`, ""},
		{"probe insecure off loopback", []string{probe, "--probe", "--upstream", "https://webhook.example.com", "--upstream-insecure"}, "exit 2", "--upstream-ca", ""},
		{"probe with nothing listening", []string{probe, "--probe", "--upstream", closed}, "exit 2", "lint --probe: no mutating webhook answered a sample", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := run(t, append([]string{"lint"}, c.args...)...)
			got := ""
			if err != nil {
				got = err.Error()[:6]
			}
			if got != c.exit || !strings.Contains(errOut, c.stderr) || !strings.Contains(out, c.stdout) {
				t.Errorf("lint %v: %v, want %q with %q on stderr and %q on stdout\nstdout:\n%s\nstderr:\n%s", c.args, err, c.exit, c.stderr, c.stdout, out, errOut)
			}
		})
	}
}

func TestLintSARIF(t *testing.T) {
	out, _, err := run(t, "lint", filepath.Join("..", "lint", "testdata", "chain-budget.yaml"), "-o", "sarif", "--fail-on", "none")
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Version string
		Runs    []struct{ Results []struct{ RuleID string } }
	}
	if err := json.Unmarshal([]byte(out), &log); err != nil || log.Version != "2.1.0" || len(log.Runs[0].Results) != 1 || log.Runs[0].Results[0].RuleID != "chain-budget" {
		t.Fatalf("%v:\n%s", err, out)
	}
}

// TestLintProjectInZeroFlags: in a kubebuilder project, lint with no
// argument reads its config/default (rendered with kustomize): the
// scaffold's webhooks, failurePolicy Fail on its own CRD's group without
// a namespaceSelector, are a warning, not an error.
func TestLintProjectInZeroFlags(t *testing.T) {
	t.Chdir(filepath.Join("..", "testdata", "project"))
	out, errOut, err := run(t, "lint", "-o", "json")
	if err != nil {
		t.Fatalf("lint in a project: %v\n%s", err, errOut)
	}
	var rep struct {
		Findings []struct{ Rule, Severity, Object, Source string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) == 0 {
		t.Fatalf("no findings in the scaffold's configurations:\n%s", out)
	}
	for _, f := range rep.Findings {
		if f.Severity == "error" || !strings.HasSuffix(f.Source, filepath.Join("config", "default")) {
			t.Errorf("finding %+v: want warnings from config/default", f)
		}
	}
}
