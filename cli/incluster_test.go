package cli

import (
	"strings"
	"testing"

	"github.com/hookback/hookback/plan"
)

// TestRenderInClusterGolden runs `hookback render --in-cluster` as a user
// would; UPDATE_GOLDEN=1 go test -run TestRenderInCluster ./cli rewrites
// the files.
func TestRenderInClusterGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"render-in-cluster", nil},
		{"render-in-cluster-custom", []string{"--install-namespace", "webhooks", "--image", "registry.example/hookback:v1",
			"--replicas", "3", "--webhooks", "pod-name,pod-eviction", "--controllers", "pod-name-label", "--cert-manager"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stderr, err := run(t, append([]string{"render", "--in-cluster"}, tt.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			if stderr != "" {
				t.Errorf("stderr: %q, want nothing", stderr)
			}
			checkGolden(t, tt.name, got)
		})
	}
}

func TestRenderInClusterReportsEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"bad values", []string{"render", "--in-cluster", "--replicas", "0", "--install-namespace", "Not_Valid", "--webhooks", "nope", "--image", "a b"},
			[]string{"--replicas 0", `--install-namespace "Not_Valid"`, `unknown webhook "nope"`, `--image "a b"`}},
		{"laptop flags", []string{"render", "--in-cluster", "--advertise-address", "192.0.2.10", "--tls-mode", "acme"},
			[]string{"--advertise-address decides a laptop session only", "--tls-mode decides a laptop session only"}},
		{"in-cluster flags alone", []string{"render", "--image", "x"}, []string{"--image needs --in-cluster"}},
		{"old install namespace: render", []string{"render", "--in-cluster", "--namespace", "webhooks"}, []string{"the install's namespace is --install-namespace"}},
		{"old install namespace: serve", []string{"serve", "--namespace", "webhooks"}, []string{"the install's namespace is --install-namespace"}},
		{"old install namespace: uninstall", []string{"uninstall", "-n", "webhooks"}, []string{"the install's namespace is --install-namespace"}},
		{"bad scope", []string{"render", "-n", "Bad_NS", "--object-selector", "=x", "--all-namespaces"},
			[]string{`--namespace "Bad_NS"`, `--object-selector "=x"`, "--all-namespaces contradicts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := run(t, tt.args...)
			if err == nil || !strings.HasPrefix(err.Error(), "exit 2: ") {
				t.Fatalf("err = %v, want exit 2", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if out != "" {
				t.Errorf("printed output despite the error: %s", out)
			}
		})
	}
}

func TestDefaultImage(t *testing.T) {
	for version, want := range map[string]string{
		"dev":    "ghcr.io/hookback/hookback:latest",
		"v1.2.0": "ghcr.io/hookback/hookback:v1.2.0",
		// git describe, as make and the release workflow stamp it.
		"v1.2.0-3-g0ea58dc": "ghcr.io/hookback/hookback:v1.2.0-3-g0ea58dc",
		"0ea58dc":           "ghcr.io/hookback/hookback:0ea58dc",
		"0ea58dc-dirty":     "ghcr.io/hookback/hookback:0ea58dc",
		// What the go command records without ldflags.
		"v0.0.0-20261123055517-0ea58dc0ffee+dirty": "ghcr.io/hookback/hookback:latest",
		"v1.2.1-0.20261123055517-0ea58dc0ffee":     "ghcr.io/hookback/hookback:latest",
		// goreleaser --snapshot (.goreleaser.yaml): never pushed.
		"v0.0.0-SNAPSHOT-0ea58dc": "ghcr.io/hookback/hookback:latest",
	} {
		t.Run(version, func(t *testing.T) {
			if got := plan.DefaultImage(version); got != want {
				t.Errorf("plan.DefaultImage(%q) = %q, want %q", version, got, want)
			}
		})
	}
}

func TestRenderInClusterIgnoresLaptopEnvironment(t *testing.T) {
	t.Setenv("HOOKBACK_STATE_DIR", t.TempDir())
	if _, _, err := run(t, "render", "--in-cluster"); err != nil {
		t.Errorf("render --in-cluster with HOOKBACK_STATE_DIR set: %v", err)
	}
}

func TestModuleVersion(t *testing.T) {
	for recorded, want := range map[string]string{"": "dev", "(devel)": "dev", "v1.2.0": "v1.2.0"} {
		t.Run(recorded, func(t *testing.T) {
			if got := moduleVersion(recorded); got != want {
				t.Errorf("moduleVersion(%q) = %q, want %q", recorded, got, want)
			}
		})
	}
}
