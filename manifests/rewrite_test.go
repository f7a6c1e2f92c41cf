package manifests

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hookback/hookback/registration"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// updateGolden is true under -update (shared with TestRenderGolden) or
// UPDATE_GOLDEN=1.
var update = flag.Bool("update", false, "rewrite golden files")

func readFile(t *testing.T, parts ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(parts...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func updateGolden() bool { return *update || os.Getenv("UPDATE_GOLDEN") == "1" }

func manifestPath(parts ...string) string {
	return filepath.Join(append([]string{"..", "testdata", "manifests"}, parts...)...)
}

func baseOptions() RewriteOptions {
	return RewriteOptions{URL: "https://192.168.1.20:8443/", CABundle: "Q0EgUEVN", Session: "dev", LeaseRef: "default/hookback-dev"}
}

func svcRoute(ns, name string, port int32, path string, hooks ...string) registration.Route {
	return registration.Route{
		Path:         "/upstream/svc/" + ns + "/" + name + "/" + portString(int64(port)) + path,
		Service:      &registration.ServiceRef{Namespace: ns, Name: name, Port: port, Path: path},
		UpstreamPath: path,
		Webhooks:     hooks,
	}
}

func TestRewriteGolden(t *testing.T) {
	tests := []struct {
		name   string
		files  []string
		opts   func(*RewriteOptions)
		routes []registration.Route
	}{
		{
			name:  "controller-gen",
			files: []string{"controller-gen.yaml"},
			routes: []registration.Route{
				svcRoute("system", "webhook-service", 443, "/mutate-batch-tutorial-kubebuilder-io-v1-cronjob", "mcronjob.kb.io"),
				svcRoute("system", "webhook-service", 443, "/validate-batch-tutorial-kubebuilder-io-v1-cronjob", "vcronjob.kb.io"),
			},
		},
		{
			name:   "list-keep-failure-policy-timeout",
			files:  []string{"list.yaml"},
			opts:   func(o *RewriteOptions) { o.KeepFailurePolicy, o.TimeoutSeconds = true, 7 },
			routes: []registration.Route{svcRoute("policy-system", "policy-webhook", 8443, "/", "pods.policy.example.com", "defaults.policy.example.com")},
		},
		{
			name:  "url-public-ca",
			files: []string{"url.json"},
			opts:  func(o *RewriteOptions) { o.CABundle = "" },
			routes: []registration.Route{
				{Path: "/upstream/url/10.0.0.7/9443/", URL: "https://10.0.0.7:9443", UpstreamPath: "/", Webhooks: []string{"c.external.example.com"}},
				{Path: "/upstream/url/hooks.example.com/443/validate/a", URL: "https://hooks.example.com/validate/a", UpstreamPath: "/validate/a",
					Webhooks: []string{"a.external.example.com", "b.external.example.com"}},
			},
		},
		{
			name:  "same-path",
			files: []string{"same-path.yaml"},
			routes: []registration.Route{
				svcRoute("team-a", "webhook", 443, "/validate", "team-a.example.com"),
				svcRoute("team-b", "webhook", 443, "/", "team-b-root.example.com"),
				svcRoute("team-b", "webhook", 443, "/validate", "team-b.example.com"),
			},
		},
		{
			name:   "match-conditions",
			files:  []string{"match-conditions.yaml"},
			routes: []registration.Route{svcRoute("injector", "sidecar-injector", 443, "/inject", "inject.sidecar.example.com")},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var paths []string
			for _, f := range tc.files {
				paths = append(paths, manifestPath("in", f))
			}
			docs, err := Load(paths, nil)
			if err != nil {
				t.Fatal(err)
			}
			opts := baseOptions()
			if tc.opts != nil {
				tc.opts(&opts)
			}
			before := deepCopyDocs(docs)
			reg, routes, err := Rewrite(docs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(docs, before) {
				t.Error("Rewrite modified its input documents")
			}
			if !reflect.DeepEqual(routes, tc.routes) {
				t.Errorf("routes:\n got %+v\nwant %+v", routes, tc.routes)
			}
			checkKeptVerbatim(t, docs, reg, opts)
			got, err := reg.YAML()
			if err != nil {
				t.Fatal(err)
			}
			golden := manifestPath("golden", tc.name+".yaml")
			if updateGolden() {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if want := readFile(t, golden); string(want) != string(got) {
				t.Errorf("rewritten YAML differs from %s (UPDATE_GOLDEN=1 go test ./manifests -run TestRewriteGolden):\n%s", golden, got)
			}
		})
	}
}

func deepCopyDocs(docs []Document) []Document {
	out := make([]Document, len(docs))
	for i, d := range docs {
		out[i] = d
		out[i].Object = d.Object.DeepCopy()
	}
	return out
}

// checkKeptVerbatim proves, beyond the golden files, that every webhook
// field hookback does not own is exactly as written, and that the owned
// ones follow opts.
func checkKeptVerbatim(t *testing.T, docs []Document, reg *registration.Registration, opts RewriteOptions) {
	t.Helper()
	if len(reg.Objects) != len(docs) {
		t.Fatalf("%d objects for %d documents", len(reg.Objects), len(docs))
	}
	owned := []string{"clientConfig", "failurePolicy", "timeoutSeconds"}
	for i, d := range docs {
		in, _, _ := unstructured.NestedSlice(d.Object.Object, "webhooks")
		out, _, _ := unstructured.NestedSlice(reg.Objects[i].Object, "webhooks")
		for j := range in {
			inHook, outHook := in[j].(map[string]any), out[j].(map[string]any)
			for _, k := range owned {
				delete(inHook, k)
			}
			if fp, ok := outHook["failurePolicy"]; !opts.KeepFailurePolicy && fp != "Ignore" {
				t.Errorf("%s: failurePolicy %v (present %v), want Ignore", inHook["name"], fp, ok)
			}
			if ts := outHook["timeoutSeconds"]; opts.TimeoutSeconds > 0 && ts != int64(opts.TimeoutSeconds) {
				t.Errorf("%s: timeoutSeconds %v, want %d", inHook["name"], ts, opts.TimeoutSeconds)
			}
			for _, k := range owned {
				delete(outHook, k)
			}
			if !reflect.DeepEqual(inHook, outHook) {
				t.Errorf("webhook changed beyond clientConfig, failurePolicy and timeoutSeconds:\n got %v\nwant %v", outHook, inHook)
			}
		}
	}
}

func TestRewriteRefuses(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		want  []string // each a whole line of the error
	}{
		{name: "helm service and deployment", files: []string{"in/helm.yaml"}, want: []string{
			`in/helm.yaml document 1: v1 Service "chart-webhook": not a webhook configuration: only admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and ValidatingWebhookConfiguration can be registered; hookback serves the webhooks itself, so leave out the rest of the deployment`,
			`in/helm.yaml document 2: apps/v1 Deployment "chart-webhook": not a webhook configuration: only admissionregistration.k8s.io/v1 MutatingWebhookConfiguration and ValidatingWebhookConfiguration can be registered; hookback serves the webhooks itself, so leave out the rest of the deployment`,
		}},
		{name: "v1beta1", files: []string{"bad/v1beta1.yaml"}, want: []string{
			`bad/v1beta1.yaml document 1: admissionregistration.k8s.io/v1beta1 MutatingWebhookConfiguration "old": admissionregistration.k8s.io/v1beta1 is not supported: convert it to admissionregistration.k8s.io/v1`,
		}},
		{name: "neither service nor url", files: []string{"bad/no-target.yaml"}, want: []string{
			`bad/no-target.yaml document 1: ValidatingWebhookConfiguration "nowhere" webhook "nowhere.example.com": clientConfig has neither service nor url: nothing to forward to`,
		}},
		{name: "http url", files: []string{"bad/http-url.yaml"}, want: []string{
			`bad/http-url.yaml document 1: ValidatingWebhookConfiguration "plain" webhook "plain.example.com": clientConfig.url "http://hooks.example.com/validate" is not an https URL`,
		}},
		{name: "url does not parse", files: []string{"bad/bad-url.yaml"}, want: []string{
			`bad/bad-url.yaml document 1: ValidatingWebhookConfiguration "broken" webhook "broken.example.com": clientConfig.url "https://hooks.example.com:port/validate" does not parse: parse "https://hooks.example.com:port/validate": invalid port ":port" after host`,
		}},
		{name: "defined twice", files: []string{"bad/duplicate.yaml"}, want: []string{
			`bad/duplicate.yaml document 2: MutatingWebhookConfiguration "twice" is defined twice, also in ../testdata/manifests/bad/duplicate.yaml document 1`,
		}},
		{name: "defined twice across files", files: []string{"in/controller-gen.yaml", "in/controller-gen.yaml"}, want: []string{
			`in/controller-gen.yaml document 1: MutatingWebhookConfiguration "mutating-webhook-configuration" is defined twice, also in ../testdata/manifests/in/controller-gen.yaml document 1`,
			`in/controller-gen.yaml document 2: ValidatingWebhookConfiguration "validating-webhook-configuration" is defined twice, also in ../testdata/manifests/in/controller-gen.yaml document 2`,
		}},
		{name: "no webhooks", files: []string{"bad/no-webhooks.yaml"}, want: []string{
			`bad/no-webhooks.yaml document 1: ValidatingWebhookConfiguration "empty" has no webhooks`,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var paths []string
			for _, f := range tc.files {
				paths = append(paths, manifestPath(f))
			}
			docs, err := Load(paths, nil)
			if err != nil {
				t.Fatal(err)
			}
			reg, routes, err := Rewrite(docs, baseOptions())
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Rewrite() error = %v, want ErrInvalid", err)
			}
			if reg != nil || routes != nil {
				t.Errorf("returned %v, %v along with an error: nothing must be applied", reg, routes)
			}
			lines := strings.Split(err.Error(), "\n")
			var want []string
			for _, w := range tc.want {
				want = append(want, "../testdata/manifests/"+w)
			}
			if !reflect.DeepEqual(lines, want) {
				t.Errorf("error lines:\n got %q\nwant %q", lines, want)
			}
			if strings.Contains(err.Error(), "registration:") {
				t.Errorf("error %q shows the package prefix to users", err)
			}
		})
	}
}

func TestRewriteOptions(t *testing.T) {
	docs, err := Load([]string{manifestPath("in", "controller-gen.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts func(*RewriteOptions)
		want string
	}{
		{name: "timeout too long", opts: func(o *RewriteOptions) { o.TimeoutSeconds = 31 }, want: "webhook timeout 31s is out of range: the apiserver allows 1 to 30 seconds"},
		{name: "negative timeout", opts: func(o *RewriteOptions) { o.TimeoutSeconds = -1 }, want: "webhook timeout -1s is out of range: the apiserver allows 1 to 30 seconds"},
		{name: "http base URL", opts: func(o *RewriteOptions) { o.URL = "http://127.0.0.1:8443" }, want: `hookback URL "http://127.0.0.1:8443" is not an https URL`},
		{name: "no session", opts: func(o *RewriteOptions) { o.Session = "" }, want: "no session to name the webhook configurations after"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			opts := baseOptions()
			tc.opts(&opts)
			if _, _, err := Rewrite(docs, opts); err == nil || err.Error() != tc.want {
				t.Errorf("Rewrite() error = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("no documents", func(t *testing.T) {
		if _, _, err := Rewrite(nil, baseOptions()); !errors.Is(err, ErrInvalid) {
			t.Errorf("Rewrite(nil) error = %v, want ErrInvalid", err)
		}
	})
	t.Run("timeout 30 allowed", func(t *testing.T) {
		opts := baseOptions()
		opts.TimeoutSeconds = 30
		if _, _, err := Rewrite(docs, opts); err != nil {
			t.Error(err)
		}
	})
}

func TestServiceRefKey(t *testing.T) {
	if got := (registration.ServiceRef{Namespace: "system", Name: "webhook-service", Port: 443, Path: "/"}).Key(); got != "system/webhook-service" {
		t.Errorf("Key() = %q", got)
	}
}
