package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/certs"
)

// templatePath is absolute, taken before any test changes directory.
var templatePath, _ = filepath.Abs(filepath.Join("..", "webhook-url.yaml.tmpl"))

// run runs hookback with args as main would (the shipped template as the
// default) and returns stdout, stderr and an error carrying the exit code.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	tmpl, rerr := os.ReadFile(templatePath)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var out, errOut bytes.Buffer
	code := Run(context.Background(), append([]string{"hookback"}, args...), Extension{Template: tmpl}, &out, &errOut)
	if code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), err
}

// TestRenderCommandGolden runs `hookback render` as a user would and compares
// its stdout with testdata/golden/render-cli.yaml. The CA is made fresh in a
// temp dir, so its bundle is replaced by a placeholder before comparing.
func TestRenderCommandGolden(t *testing.T) {
	state := t.TempDir()
	out, _, err := run(t, "render", "--advertise-address", "192.0.2.10", "--port", "9443",
		"--session", "dev", "--state-dir", state, "--webhooks", "all")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	ca, err := certs.LoadOrCreateCA(state, "")
	if err != nil {
		t.Fatal(err)
	}
	got := strings.ReplaceAll(out, ca.Bundle(), "CA-BUNDLE")
	if !strings.Contains(got, "CA-BUNDLE") {
		t.Fatalf("rendered output lacks the state dir's CA bundle:\n%s", got)
	}
	checkGolden(t, "render-cli", got)
}

// checkGolden compares got with testdata/golden/NAME.yaml, which
// UPDATE_GOLDEN=1 rewrites.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("..", "testdata", "golden", name+".yaml")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != got {
		t.Errorf("differs from %s (UPDATE_GOLDEN=1 go test -run %s ./cli rewrites it):\n%s", golden, t.Name(), got)
	}
}

func TestRenderCommandRefusesUnknownWebhook(t *testing.T) {
	out, _, err := run(t, "render", "--advertise-address", "192.0.2.10", "--state-dir", t.TempDir(), "--webhooks", "pod-nmae")
	if err == nil || !strings.Contains(err.Error(), `exit 2: Error: --webhooks: unknown webhook "pod-nmae"`) {
		t.Errorf("err = %v", err)
	}
	if out != "" {
		t.Errorf("printed output despite the error: %s", out)
	}
}

func TestSessionNames(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Alice@Laptop.local", "alice-laptop-local"},
		{"ci_runner-42", "ci-runner-42"},
		{strings.Repeat("a", 60), strings.Repeat("a", 40)},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := sanitizeSession(tc.in); got != tc.want {
				t.Errorf("sanitizeSession(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestReplay(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    []string
		wantErr string
	}{
		{name: "validating webhook denies", args: []string{"--webhook", "pod-name", "../testdata/webhook/pod-name/v1-create-banned-name.json"},
			want: []string{`"allowed": false`, `pod name contains \"offensive\"`}},
		{name: "mutating webhook prints the decoded patch", args: []string{"--webhook", "pod-lifespan", "../testdata/webhook/pod-lifespan/v1-create-3.json"},
			want: []string{`"patchType": "JSONPatch"`, "patch:\n[", `"path": "/spec/tolerations/-"`}},
		{name: "events are shown", args: []string{"--webhook", "pod-lifespan", "../testdata/webhook/pod-lifespan/v1-create-invalid.json"},
			want: []string{"event: Warning LifespanInvalid"}},
		{name: "unknown webhook", args: []string{"--webhook", "nope", "../testdata/webhook/pod-name/v1-create-allowed.json"}, wantErr: `unknown webhook "nope"`},
		{name: "not a review", args: []string{"--webhook", "pod-name", "../testdata/admission/garbage.json"}, wantErr: "refused the review (HTTP 400)"},
		{name: "missing file", args: []string{"--webhook", "pod-name", "../testdata/nope.json"}, wantErr: "open review"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, err := run(t, append([]string{"replay"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("replay: %v\n%s", err, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestCACommand(t *testing.T) {
	state := t.TempDir()
	pemOut, _, err := run(t, "ca", "--state-dir", state)
	if err != nil {
		t.Fatal(err)
	}
	bundleOut, _, err := run(t, "ca", "--state-dir", state, "--bundle")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certs.LoadOrCreateCA(state, "")
	if err != nil {
		t.Fatal(err)
	}
	if pemOut != string(ca.CertPEM) || strings.TrimSpace(bundleOut) != ca.Bundle() {
		t.Errorf("ca printed %q / %q, want the state dir's CA", pemOut, bundleOut)
	}
}

// Global flags work before and after the command, as kubectl users type
// them, and the error is a sentence naming the file, not a package.
func TestGlobalFlagsBeforeAndAfterTheCommand(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	for _, args := range [][]string{
		{"--kubeconfig", missing, "check"},
		{"check", "--kubeconfig", missing},
		{"cleanup", "--kubeconfig", missing},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, _, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), missing) {
				t.Fatalf("err = %v, want one naming %s", err, missing)
			}
			if strings.Contains(err.Error(), "flag provided but not defined") {
				t.Errorf("global flag refused after the command: %v", err)
			}
			for _, prefix := range []string{"kubeconfig: ", "server: ", "registration: ", "session: ", "hookback: "} {
				if strings.Contains(err.Error(), prefix) {
					t.Errorf("error shows a package prefix %q: %v", prefix, err)
				}
			}
		})
	}
	t.Run("a later setting wins over an earlier one", func(t *testing.T) {
		if _, _, err := run(t, "--log-format", "yaml", "ca", "--state-dir", t.TempDir(), "--log-format", "json"); err != nil {
			t.Errorf("--log-format json after the command did not override yaml before it: %v", err)
		}
	})
}

// Validate reports every problem of the flags at once, as a usage error.
func TestOptionsReportEveryProblem(t *testing.T) {
	_, _, err := run(t, "render", "--advertise-address", "192.0.2.10", "--state-dir", t.TempDir(),
		"--port", "0", "--webhooks", "nope", "--controllers", "pod-name-label,bogus", "--tls-mode", "files",
		"--log-level", "loud", "--session", "Not_Valid", "--cpu-oversell-factor", "0.5")
	if err == nil || !strings.HasPrefix(err.Error(), "exit 2: ") {
		t.Fatalf("err = %v, want exit 2", err)
	}
	for _, want := range []string{"--port 0", `unknown webhook "nope"`, `unknown controller "bogus"`,
		"--tls-mode files needs --tls-cert-file and --tls-key-file", `--log-level "loud"`, `--session "Not_Valid"`, "--cpu-oversell-factor 0.5: want a finite number >= 1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// Every command that takes the built-in webhooks' flags names the flag to
// fix, not the option's name inside the webhook package.
func TestWebhookOptionFlags(t *testing.T) {
	bad := []string{"--banned-words", "ok,", "--sidecar-image", "busy box", "--cpu-oversell-factor", "0.5"}
	for _, args := range [][]string{
		{"render", "--advertise-address", "192.0.2.10", "--state-dir", t.TempDir()},
		{"serve"},
		{"replay", "--webhook", "pod-name", "-"},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, _, err := run(t, append(args, bad...)...)
			if err == nil || !strings.HasPrefix(err.Error(), "exit 2: ") {
				t.Fatalf("err = %v, want exit 2", err)
			}
			for _, want := range []string{`--banned-words entry 2 "": want a non-empty word`,
				`--sidecar-image "busy box": want an image reference without whitespace`,
				"--cpu-oversell-factor 0.5: want a finite number >= 1 (1 disables overselling)"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{"bash": "complete -o bashdefault", "zsh": "#compdef hookback", "fish": "complete -c hookback"} {
		t.Run(shell, func(t *testing.T) {
			out, _, err := run(t, "completion", shell)
			if err != nil || !strings.Contains(out, want) {
				t.Errorf("completion %s: %v\n%s", shell, err, out)
			}
		})
	}
	t.Run("candidates come from the binary", func(t *testing.T) {
		// urfave/cli reads the words being completed from os.Args.
		saved := os.Args
		os.Args = []string{"hookback", "--generate-bash-completion"}
		defer func() { os.Args = saved }()
		out, errOut, err := run(t, "--generate-bash-completion")
		if err != nil || !strings.Contains(out, "start") || !strings.Contains(out, "completion") {
			t.Errorf("command candidates: %v\n%q\n%q", err, out, errOut)
		}
	})
	t.Run("unknown shell", func(t *testing.T) {
		if _, _, err := run(t, "completion", "tcsh"); err == nil || !strings.Contains(err.Error(), "exit 2") {
			t.Errorf("err = %v, want a usage error", err)
		}
	})
}

// Every example in --help is a hookback command line, shown in its
// command's help; TestHelpExamplesRun (test/e2e/cli_test.go) runs them.
func TestExamplesAreInTheHelp(t *testing.T) {
	for cmd, examples := range Examples() {
		args := []string{"--help"}
		if cmd != "" {
			args = []string{cmd, "--help"}
		}
		out, _, err := run(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for _, e := range examples {
			if !strings.HasPrefix(e.Command, "hookback ") || !strings.Contains(out, e.Command) {
				t.Errorf("%v does not show example %q:\n%s", args, e.Command, out)
			}
		}
	}
}

func TestFlagsAfterArguments(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{name: "value flag after an argument", in: []string{"hookback", "replay", "dir", "--upstream", "http://x"},
			want: []string{"hookback", "replay", "--upstream", "http://x", "dir"}},
		{name: "bool flag takes no value", in: []string{"hookback", "replay", "dir", "--upstream-insecure", "more"},
			want: []string{"hookback", "replay", "--upstream-insecure", "dir", "more"}},
		{name: "flag=value and stdin dash", in: []string{"hookback", "replay", "-", "--webhook=pod-name"},
			want: []string{"hookback", "replay", "--webhook=pod-name", "-"}},
		{name: "after -- everything is an argument", in: []string{"hookback", "replay", "--", "--upstream"},
			want: []string{"hookback", "replay", "--", "--upstream"}},
		{name: "global flags before the command stay", in: []string{"hookback", "--context", "c", "check", "--request-timeout", "1s"},
			want: []string{"hookback", "--context", "c", "check", "--request-timeout", "1s"}},
	}
	app := newApp(Extension{}, io.Discard, io.Discard)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := interspersed(app, tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("interspersed(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestInspectorFlags(t *testing.T) {
	_, _, err := run(t, "start", "--state-dir", t.TempDir(), "--inspector-address", "0.0.0.0:8082", "--inspector-keep", "-1")
	if err == nil || !strings.HasPrefix(err.Error(), "exit 2: ") {
		t.Fatalf("err = %v, want exit 2", err)
	}
	for _, want := range []string{"--inspector-address 0.0.0.0:8082", "--inspector-expose", "--inspector-keep -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestYourWebhookFlags: the checks of --webhook-config, --upstream and
// --timeout are flag errors like any other: exit 2, listed with the rest,
// before any kubeconfig is read.
func TestYourWebhookFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "timeout beyond the apiserver's limit, with another bad flag",
			args: []string{"start", "--timeout", "45s", "--inspector-keep", "-1"},
			want: []string{"--timeout 45s: want 1s to 30s", "--inspector-keep -1"}},
		{name: "upstream without manifests", args: []string{"start", "--upstream", "https://127.0.0.1:9443"},
			want: []string{"--upstream needs --webhook-config"}},
		{name: "render too", args: []string{"render", "--timeout", "31s", "--advertise-address", "127.0.0.1"},
			want: []string{"--timeout 31s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "missing"))
			_, _, err := run(t, append(tc.args, "--state-dir", t.TempDir())...)
			if err == nil || !strings.HasPrefix(err.Error(), "exit 2: ") {
				t.Fatalf("err = %v, want exit 2", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestSharedFlagHelp: a flag a command shares with start by name is
// described as that command reads it, not as start does.
func TestSharedFlagHelp(t *testing.T) {
	tests := []struct {
		command, wants, notWant string
	}{
		{command: "check", wants: "check what start --tunnel needs", notWant: "reach the apiserver's calls through a relay"},
		{command: "rbac", wants: "add what start --tunnel needs", notWant: "reach the apiserver's calls through a relay"},
		{command: "cleanup", wants: "where relays are looked for", notWant: "created when missing"},
		{command: "uninstall", wants: "where laptop sessions keep their Leases", notWant: "canary ConfigMap"},
		{command: "serve", wants: "leader Lease", notWant: "the advertise address"},
		{command: "start", wants: "reach the apiserver's calls through a relay", notWant: "leader Lease"},
	}
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			out, _, err := run(t, tc.command, "--help")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, tc.wants) || strings.Contains(out, tc.notWant) {
				t.Errorf("%s --help: want %q and not %q:\n%s", tc.command, tc.wants, tc.notWant, out)
			}
		})
	}
}
