package manifests

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hookback/hookback/registration"
)

func projectPath(parts ...string) string {
	return filepath.Join(append([]string{"..", "testdata", "project"}, parts...)...)
}

// intake is what a Manifests says, for exact comparisons.
type intake struct {
	Webhooks, CRDs, Services []string
	Skipped                  string
}

func summarize(m *Set) intake {
	var out intake
	for _, d := range m.Webhooks {
		out.Webhooks = append(out.Webhooks, d.Object.GetKind()+"/"+d.Object.GetName())
	}
	for _, c := range m.CRDs {
		out.CRDs = append(out.CRDs, c.GetName())
	}
	out.Services = m.Services()
	out.Skipped = m.SkippedSummary()
	return out
}

func TestRead(t *testing.T) {
	// config/default as kubebuilder scaffolds it: namespace and name prefix
	// applied to the webhooks' Service, but not to the CRD's conversion
	// Service (kustomize has no name reference for it), as in-cluster.
	rendered := intake{
		Webhooks: []string{registration.KindMutatingHook + "/project-mutating-webhook-configuration", registration.KindValidatingHook + "/project-validating-webhook-configuration"},
		CRDs:     []string{"cronjobs.batch.tutorial.kubebuilder.io"},
		Services: []string{"project-system/project-webhook-service", "project-system/webhook-service"},
		Skipped:  "apps/v1 Deployment (1), cert-manager.io/v1 Certificate (1), cert-manager.io/v1 Issuer (1), v1 Namespace (1), v1 Service (1)",
	}
	bundle, err := os.ReadFile(projectPath("dist", "install.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		paths []string
		stdin string
		want  intake
	}{
		{name: "kustomize directory", paths: []string{projectPath("config", "default")}, want: rendered},
		{name: "bundle", paths: []string{projectPath("dist", "install.yaml")}, want: rendered},
		{name: "bundle on stdin", paths: []string{"-"}, stdin: string(bundle), want: rendered},
		{name: "kustomize directory without prefix", paths: []string{projectPath("config", "webhook")}, want: intake{
			Webhooks: []string{registration.KindMutatingHook + "/mutating-webhook-configuration", registration.KindValidatingHook + "/validating-webhook-configuration"},
			Services: []string{"system/webhook-service"},
			Skipped:  "v1 Service (1)",
		}},
		{name: "plain directory", paths: []string{projectPath("config", "crd", "bases")}, want: intake{
			CRDs: []string{"cronjobs.batch.tutorial.kubebuilder.io"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Read(tt.paths, strings.NewReader(tt.stdin))
			if err != nil {
				t.Fatal(err)
			}
			if got := summarize(m); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			for _, c := range m.CRDs {
				if a := c.GetAnnotations()["cert-manager.io/inject-ca-from"]; a != "" {
					t.Errorf("CRD %s keeps inject-ca-from %q: cert-manager would overwrite hookback's caBundle", c.GetName(), a)
				}
			}
		})
	}
}

func TestReadBadKustomization(t *testing.T) {
	dir := manifestPath("bad-kustomize")
	_, err := Read([]string{dir}, nil)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "render kustomization "+dir) || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("err = %v, want ErrInvalid naming %s and missing.yaml", err, dir)
	}
}

func TestConversionTarget(t *testing.T) {
	m, err := Read([]string{projectPath("config", "default")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := ConversionTarget(m.CRDs[0])
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	want := registration.Route{Path: "/upstream/svc/project-system/webhook-service/443/convert", UpstreamPath: "/convert",
		Service: &registration.ServiceRef{Namespace: "project-system", Name: "webhook-service", Port: 443, Path: "/convert"}}
	if !reflect.DeepEqual(r, want) {
		t.Errorf("got %+v, want %+v", r, want)
	}
	none := m.CRDs[0].DeepCopy()
	none.Object["spec"].(map[string]any)["conversion"] = map[string]any{"strategy": "None"}
	if _, ok, err := ConversionTarget(none); ok || err != nil {
		t.Errorf("strategy None: ok %v, err %v", ok, err)
	}
}
