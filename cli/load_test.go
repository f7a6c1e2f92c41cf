package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// load's bad flags exit 2 with every problem at once, each named by its
// flag; none needs a cluster.
func TestLoadUsage(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://192.0.2.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "every problem", args: []string{"--rate", "fast", "--request-timeout", "0s", "--max-error-rate", "x", "-o", "xml", "--max-in-flight", "0"},
			want: []string{`--rate "fast": want requests per second`, "--namespace is required", "--request-timeout 0s: want 1s to 1m",
				`--max-error-rate "x"`, `--output "xml"`, "--max-in-flight 0"}},
		{name: "two namespaces", args: []string{"-n", "a", "-n", "b"}, want: []string{"--namespace given 2 times"}},
		{name: "start's flags without --start", args: []string{"-n", "a", "-f", "x.yaml", "--webhooks", "pod-name", "--port", "9000"},
			want: []string{"--port, --webhooks: start's flags take effect with --start only"}},
		{name: "nothing to send", args: []string{"-n", "a"}, want: []string{"nothing to send: give manifests (--filename), suites (--suite) or recordings (--record)"}},
		{name: "a high rate on a cluster elsewhere", args: []string{"-n", "a", "-f", "../load/testdata/pod.yaml", "--rate", "10..100"},
			want: []string{"refusing 100 requests per second on a cluster that is not on this machine", "set --allow-high-rate"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := run(t, append([]string{"load", "--kubeconfig", kubeconfig}, tt.args...)...)
			if err == nil || !strings.HasPrefix(err.Error(), "exit 2: ") {
				t.Fatalf("err = %v, want exit 2", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
