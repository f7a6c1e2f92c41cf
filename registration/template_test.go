package registration

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

var allPaths = []string{"/validate-pod-name", "/mutate-pod-lifespan", "/mutate-pod-sidecar", "/validate-pod-eviction", "/mutate-node-status"}

func readFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRenderGolden(t *testing.T) {
	tmpl := readFile(t, "..", "webhook-url.yaml.tmpl")
	tests := []struct {
		name    string
		enabled []string
		paths   []string
		ca      string
	}{
		{name: "all", enabled: []string{"pod-name", "pod-lifespan", "pod-sidecar", "pod-eviction", "node-status"}, paths: allPaths, ca: "Q0EgUEVN"},
		{name: "validating-only", enabled: []string{"pod-name"}, paths: []string{"/validate-pod-name"}, ca: "Q0EgUEVN"},
		{name: "public-ca", enabled: []string{"pod-sidecar"}, paths: []string{"/mutate-pod-sidecar"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg, err := Render("webhook-url.yaml.tmpl", tmpl,
				TemplateData{URL: "https://127.0.0.1:8443", CABundle: tc.ca, Session: "dev", Enabled: tc.enabled},
				RenderOptions{Paths: tc.paths, LeaseRef: "default/hookback-dev"})
			if err != nil {
				t.Fatal(err)
			}
			got, err := reg.YAML()
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("..", "testdata", "golden", "render-"+tc.name+".yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFile(t, golden); string(want) != string(got) {
				t.Errorf("rendered YAML differs from %s (run go test ./server -run TestRenderGolden -update):\n%s", golden, got)
			}
		})
	}
}

func TestRenderRefuses(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		{file: "configmap.yaml.tmpl", want: "only admissionregistration.k8s.io/v1"},
		{file: "unserved-path.yaml.tmpl", want: `path "/validate-pod-nmae" is not served by any enabled webhook (served: /validate-pod-name`},
		{file: "service.yaml.tmpl", want: "clientConfig.service"},
		{file: "missing-key.yaml.tmpl", want: "Nope"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			tmpl := readFile(t, "..", "testdata", "templates", tc.file)
			_, err := Render(tc.file, tmpl, TemplateData{URL: "https://127.0.0.1:8443", Session: "dev"}, RenderOptions{Paths: allPaths})
			if !errors.Is(err, ErrTemplate) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Render() error = %v, want ErrTemplate containing %q", err, tc.want)
			}
		})
	}
}

func TestRenderDisabledWebhookPathRefused(t *testing.T) {
	// The shipped template only lists enabled webhooks, so a disabled one's
	// path never reaches the check; a hand-written one that does is refused.
	tmpl := readFile(t, "..", "webhook-url.yaml.tmpl")
	reg, err := Render("t", tmpl, TemplateData{URL: "https://h:1", Session: "s", Enabled: []string{"pod-name"}}, RenderOptions{Paths: []string{"/validate-pod-name"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(reg.Objects) != 1 || reg.Objects[0].GetName() != "hookback-validating-s" {
		t.Fatalf("objects = %v", reg.Objects)
	}
	if got := reg.Objects[0].GetLabels(); got[LabelManagedBy] != "hookback" || got[LabelSession] != "s" {
		t.Errorf("labels = %v", got)
	}
}
