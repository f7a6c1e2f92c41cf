package e2e

import (
	"context"
	"os"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// example is one `$ command` of a console block and the output printed
// after it (empty: not checked).
type example struct{ cmd, out string }

// consoleExamples returns the commands of the first console block after the
// heading in the Markdown file: continuation lines joined, each with the
// lines it is shown to print.
func consoleExamples(t *testing.T, file, heading string) []example {
	t.Helper()
	b, err := os.ReadFile(repoPath(file))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut("\n"+string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	_, rest, ok = strings.Cut(rest, "```console\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatalf("%s: no console block after %q", file, heading)
	}
	var out []example
	cont := false
	for _, line := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		switch {
		case cont:
			out[len(out)-1].cmd += "\n" + line
		case strings.HasPrefix(line, "$ "):
			out = append(out, example{cmd: strings.TrimPrefix(line, "$ ")})
		case len(out) > 0:
			out[len(out)-1].out += line + "\n"
		}
		cont = strings.HasSuffix(line, "\\")
	}
	return out
}

// TestOptInExamplesRunAsPasted runs the pod-name and pod-lifespan examples
// of docs/builtins.md and docs/webhooks.md as written, one after the other in the
// same terminal: they create and label the namespace the opt-in built-ins
// select, and print what the docs show.
func TestOptInExamplesRunAsPasted(t *testing.T) {
	requireLocal(t, "creates the namespace demo the examples name")
	s := newShellEnv(t)
	p := start(t, "--webhooks", "pod-name,pod-lifespan", "--controllers", "none")
	p.ready(t)
	t.Cleanup(func() {
		_ = env.client.CoreV1().Namespaces().Delete(context.Background(), "demo", metav1.DeleteOptions{})
	})
	for _, src := range []struct{ file, heading string }{
		{"docs/builtins.md", "### pod-name"}, {"docs/builtins.md", "### pod-lifespan"},
		{"docs/webhooks.md", "# Built-in webhooks"}, {"docs/webhooks.md", "## pod-name: deny banned words in pod names"},
		{"docs/webhooks.md", "## pod-lifespan: tolerations from a requested lifespan"},
	} {
		for _, ex := range consoleExamples(t, src.file, src.heading) {
			// Pasted twice (builtins.md, then webhooks.md), creating the namespace
			// again fails: that line is the only one allowed to.
			line := strings.Replace(ex.cmd, "kubectl create namespace demo &&", "{ kubectl create namespace demo || true; } &&", 1)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			out, err := s.shell(ctx, line).CombinedOutput()
			cancel()
			denial := strings.HasPrefix(ex.out, "Error from server")
			if (err != nil) != denial || !strings.Contains(string(out), strings.TrimSpace(ex.out)) {
				t.Errorf("%s, %s: %s: %v\ngot:\n%s\nwant:\n%s", src.file, src.heading, ex.cmd, err, out, ex.out)
			}
		}
	}
	p.whWaitLogLine(t, "msg=admission", "webhook=pod-lifespan", "namespace=demo", "decision=allowed")
}
