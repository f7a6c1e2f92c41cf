package kubeconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
)

// writeKubeconfig writes a kubeconfig with one cluster per context, each
// cluster's server naming the context so tests can see which one won.
func writeKubeconfig(t *testing.T, path, current string, contexts ...string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Config\ncurrent-context: " + current + "\nclusters:\n")
	for _, c := range contexts {
		b.WriteString("- name: " + c + "\n  cluster:\n    server: https://" + c + ".example:6443\n")
	}
	b.WriteString("users:\n- name: u\n  user:\n    token: t\ncontexts:\n")
	for _, c := range contexts {
		b.WriteString("- name: " + c + "\n  context:\n    cluster: " + c + "\n    user: u\n")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPrecedence(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	homeFile := filepath.Join(home, ".kube", "config")
	explicit := filepath.Join(dir, "explicit.yaml")
	envA := filepath.Join(dir, "a.yaml")
	envB := filepath.Join(dir, "b.yaml")
	writeKubeconfig(t, homeFile, "home", "home")
	writeKubeconfig(t, explicit, "explicit", "explicit", "other")
	writeKubeconfig(t, envA, "a", "a")
	writeKubeconfig(t, envB, "b", "b", "bonly")
	list := func(fs ...string) string { return strings.Join(fs, string(filepath.ListSeparator)) }
	noInCluster := func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }

	tests := []struct {
		name       string
		opts       Options
		kubeconfig string // $KUBECONFIG
		wantServer string
		wantCtx    string
		wantErr    string
	}{
		{name: "home file when nothing else", opts: Options{HomeDir: home}, wantServer: "https://home.example:6443", wantCtx: "home"},
		{name: "KUBECONFIG beats home", opts: Options{HomeDir: home}, kubeconfig: envA, wantServer: "https://a.example:6443", wantCtx: "a"},
		{name: "explicit beats KUBECONFIG", opts: Options{Path: explicit, HomeDir: home}, kubeconfig: envA, wantServer: "https://explicit.example:6443", wantCtx: "explicit"},
		{name: "KUBECONFIG list merges, first current-context wins", opts: Options{HomeDir: home}, kubeconfig: list(envA, envB), wantServer: "https://a.example:6443", wantCtx: "a"},
		{name: "context from a later file in the list", opts: Options{HomeDir: home, Context: "bonly"}, kubeconfig: list(envA, envB), wantServer: "https://bonly.example:6443", wantCtx: "bonly"},
		{name: "missing files in KUBECONFIG are skipped", opts: Options{HomeDir: home}, kubeconfig: list(filepath.Join(dir, "nope"), envB), wantServer: "https://b.example:6443", wantCtx: "b"},
		{name: "--context overrides current-context", opts: Options{Path: explicit, Context: "other"}, wantServer: "https://other.example:6443", wantCtx: "other"},
		{name: "unknown context lists the available ones", opts: Options{Path: explicit, Context: "x"}, wantErr: `context "x" not found in ` + explicit + "; available: explicit, other"},
		{name: "explicit file missing", opts: Options{Path: filepath.Join(dir, "missing.yaml")}, wantErr: `read kubeconfig.Options.Path "`},
		{name: "nothing at all", opts: Options{HomeDir: filepath.Join(dir, "empty")}, wantErr: "no kubeconfig found: set kubeconfig.Options.Path or KUBECONFIG"},
		{name: "KUBECONFIG names only missing files", opts: Options{HomeDir: home}, kubeconfig: filepath.Join(dir, "nope"), wantErr: "names no existing file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.Getenv = func(k string) string {
				if k == "KUBECONFIG" {
					return tc.kubeconfig
				}
				return ""
			}
			opts.InCluster = noInCluster
			cfg, err := Load(opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Load() error = %v, want it to contain %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load() error = %v", err)
			}
			if cfg.Server != tc.wantServer || cfg.Context != tc.wantCtx {
				t.Errorf("Load() = server %q context %q, want %q %q", cfg.Server, cfg.Context, tc.wantServer, tc.wantCtx)
			}
		})
	}
}

func TestLoadInCluster(t *testing.T) {
	opts := Options{
		HomeDir:   t.TempDir(),
		Getenv:    func(string) string { return "" },
		InCluster: func() (*rest.Config, error) { return &rest.Config{Host: "https://10.0.0.1:443"}, nil },
	}
	cfg, err := Load(opts)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server != "https://10.0.0.1:443" || cfg.Source() != "in-cluster service account" {
		t.Errorf("got %q from %q", cfg.Server, cfg.Source())
	}
	opts.InCluster = func() (*rest.Config, error) { return nil, rest.ErrNotInCluster }
	if _, err := Load(opts); !errors.Is(err, ErrNoConfig) {
		t.Errorf("Load() error = %v, want ErrNoConfig", err)
	}
}
