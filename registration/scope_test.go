package registration

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"
)

// TestScopedRenderGolden renders every built-in under a scope: the opt-in
// built-ins select the named namespaces instead of the label, node-status
// is left out, and every webhook carries the object selector and the
// only-mine condition.
func TestScopedRenderGolden(t *testing.T) {
	tmpl := readFile(t, "..", "webhook-url.yaml.tmpl")
	sc := Scope{Namespaces: []string{"team-a", "team-b"}, ObjectSelector: "app=web", OnlyMine: true, Username: "alice"}
	reg, err := Render("webhook-url.yaml.tmpl", tmpl,
		TemplateData{URL: "https://127.0.0.1:8443", CABundle: "Q0EgUEVN", Session: "dev",
			Enabled: []string{"pod-name", "pod-lifespan", "pod-sidecar", "pod-eviction", "node-status"}, Namespaces: sc.Namespaces},
		RenderOptions{Paths: allPaths, LeaseRef: "default/hookback-dev"})
	if err != nil {
		t.Fatal(err)
	}
	objs, notes, err := sc.Apply(reg.Objects)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "node-status.hookback.dev not registered") {
		t.Errorf("notes = %q, want one saying node-status is not registered", notes)
	}
	got, err := (&Registration{Objects: objs}).YAML()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("..", "testdata", "golden", "render-scoped.yaml")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readFile(t, golden); string(want) != string(got) {
		t.Errorf("scoped YAML differs from %s (go test ./registration -run TestScopedRenderGolden -update):\n%s", golden, got)
	}
}

// userHook is a webhook as its author wrote it, with its own selectors and
// condition, which a scope must keep.
const userHook = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: mine}
webhooks:
- name: mine.example.com
  clientConfig: {url: "https://127.0.0.1:8443/mine"}
  rules:
  - {apiGroups: ["apps"], apiVersions: ["v1"], operations: ["CREATE"], resources: ["deployments"], scope: "*"}
  - {apiGroups: [""], apiVersions: ["v1"], operations: ["CREATE"], resources: ["namespaces"], scope: Cluster}
  namespaceSelector:
    matchLabels: {team: a}
  objectSelector:
    matchExpressions: [{key: tier, operator: NotIn, values: [db]}]
  matchConditions:
  - {name: not-dry, expression: "!request.dryRun"}
`

func TestScopeApply(t *testing.T) {
	tests := []struct {
		name  string
		scope Scope
		// want are substrings of the scoped webhook's YAML.
		want []string
		gone bool
	}{
		{name: "unscoped leaves it as written", scope: Scope{},
			want: []string{"scope: '*'", "scope: Cluster", "team: a"}},
		{name: "namespace ANDed, cluster rule dropped", scope: Scope{Namespaces: []string{"dev"}},
			want: []string{"team: a", "key: kubernetes.io/metadata.name\n      operator: In\n      values:\n      - dev",
				"scope: Namespaced", "resources:\n    - deployments", "hookback.dev/scope: namespaces dev"}},
		{name: "namespace selector ANDed", scope: Scope{NamespaceSelector: "env=dev,!legacy"},
			want: []string{"team: a", "key: env\n      operator: In\n      values:\n      - dev", "key: legacy\n      operator: DoesNotExist"}},
		{name: "object selector ANDed", scope: Scope{ObjectSelector: "app in (web,api)"},
			want: []string{"key: tier\n      operator: NotIn", "key: app\n      operator: In\n      values:\n      - api\n      - web", "scope: Cluster"}},
		{name: "only mine ANDed", scope: Scope{OnlyMine: true, Username: `kubernetes-admin`},
			want: []string{"name: not-dry", "expression: request.userInfo.username == \"kubernetes-admin\"\n    name: hookback-only-mine"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := decodeDocuments([]byte(userHook))
			if err != nil {
				t.Fatal(err)
			}
			kept, _, err := tc.scope.Apply(objs)
			if err != nil {
				t.Fatal(err)
			}
			if len(kept) != 1 {
				t.Fatalf("kept %d objects, want 1", len(kept))
			}
			b, _ := yaml.Marshal(kept[0].Object)
			for _, w := range tc.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("missing %q in:\n%s", w, b)
				}
			}
		})
	}
}

func TestScopeApplyDropsClusterOnlyConfiguration(t *testing.T) {
	objs, _ := decodeDocuments([]byte(strings.ReplaceAll(userHook, `scope: "*"`, `scope: Cluster`)))
	kept, notes, err := Scope{Namespaces: []string{"dev"}}.Apply(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "mine.example.com not registered") {
		t.Errorf("kept %d, notes %q: want the configuration dropped with one note", len(kept), notes)
	}
	// Applying twice adds nothing twice (a re-apply renders afresh, but a
	// template may already name the namespaces).
	objs, _ = decodeDocuments([]byte(userHook))
	sc := Scope{Namespaces: []string{"dev"}, OnlyMine: true, Username: "u"}
	once, _, _ := sc.Apply(objs)
	a, _ := yaml.Marshal(once[0].Object)
	twice, _, _ := sc.Apply(once)
	b, _ := yaml.Marshal(twice[0].Object)
	if string(a) != string(b) {
		t.Errorf("second Apply changed the object:\n%s\nvs\n%s", a, b)
	}
}

func TestScopeValidate(t *testing.T) {
	tests := []struct {
		name  string
		scope Scope
		want  []string
	}{
		{name: "fine", scope: Scope{Namespaces: []string{"a"}, NamespaceSelector: "x=y", ObjectSelector: "!z", ConvertCRDs: []string{"widgets.example.com"}}},
		{name: "bad namespace", scope: Scope{Namespaces: []string{"Not_OK"}}, want: []string{`registration.Scope.Namespaces "Not_OK"`}},
		{name: "bad selectors", scope: Scope{NamespaceSelector: "a in b", ObjectSelector: "=x"},
			want: []string{`registration.Scope.NamespaceSelector "a in b"`, `registration.Scope.ObjectSelector "=x"`}},
		{name: "all contradicts namespace", scope: Scope{AllNamespaces: true, Namespaces: []string{"a"}}, want: []string{"registration.Scope.AllNamespaces contradicts registration.Scope.Namespaces"}},
		{name: "bad crd", scope: Scope{ConvertCRDs: []string{"widgets"}}, want: []string{`registration.Scope.ConvertCRDs "widgets": want a CRD name`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.scope.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLocalCluster(t *testing.T) {
	tests := []struct {
		server, context string
		local           bool
	}{
		{"https://127.0.0.1:6443", "whatever", true},
		{"https://localhost:6443", "whatever", true},
		{"https://[::1]:6443", "x", true},
		{"https://203.0.113.7:6443", "kind-dev", true},
		{"https://203.0.113.7:6443", "kwok-hookback", true},
		{"https://203.0.113.7:6443", "minikube", true},
		{"https://203.0.113.7:6443", "k3d-team", true},
		{"https://203.0.113.7:6443", "docker-desktop", true},
		{"https://203.0.113.7:6443", "rancher-desktop", true},
		{"https://203.0.113.7:6443", "orbstack", true},
		{"https://203.0.113.7:6443", "gke_team_dev", false},
		{"https://dev.example.com:6443", "minikube-ish", false},
	}
	for _, tc := range tests {
		t.Run(tc.server+" "+tc.context, func(t *testing.T) {
			local, why := LocalCluster(tc.server, tc.context)
			if local != tc.local {
				t.Errorf("LocalCluster = %v (%s), want %v", local, why, tc.local)
			}
		})
	}
}

func TestScopeRefuseAndConvert(t *testing.T) {
	remote := Scope{}
	err := remote.Refuse("server 203.0.113.7 is not on this machine")
	if !errors.Is(err, ErrClusterWide) {
		t.Fatalf("Refuse = %v, want ErrClusterWide", err)
	}
	for _, w := range []string{"registration.Scope.Namespaces NS", "registration.Scope.OnlyMine", "registration.Scope.AllNamespaces", "203.0.113.7"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not name %s", err, w)
		}
	}
	for _, ok := range []Scope{{Local: true}, {Namespaces: []string{"a"}}, {OnlyMine: true}, {AllNamespaces: true}} {
		if err := ok.Refuse("x"); err != nil {
			t.Errorf("%+v refused: %v", ok, err)
		}
	}
	named := Scope{Namespaces: []string{"a"}, ConvertCRDs: []string{"widgets.example.com"}}
	if !named.Convert("widgets.example.com") || named.Convert("gadgets.example.com") {
		t.Error("Convert on a remote cluster: want only the named CRD")
	}
	msg := named.LeftAlone([]string{"widgets.example.com", "gadgets.example.com"}).Error()
	if !strings.Contains(msg, "gadgets.example.com left alone") || strings.Contains(msg, "widgets") || !strings.Contains(msg, "name a CRD with registration.Scope.ConvertCRDs") {
		t.Errorf("LeftAlone = %q", msg)
	}
	if (Scope{Local: true}).LeftAlone([]string{"gadgets.example.com"}) != nil || !(Scope{AllNamespaces: true}).Convert("x.y") {
		t.Error("local clusters and --all-namespaces convert every CRD")
	}
}

func TestScopeResolve(t *testing.T) {
	tests := []struct {
		name, version, want string
	}{
		{name: "new enough", version: "v1.36.3"},
		{name: "too old", version: "v1.27.4", want: "registration.Scope.OnlyMine needs Kubernetes 1.28 or later"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{GitVersion: tc.version}
			cs.PrependReactor("create", "selfsubjectreviews", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, &authnv1.SelfSubjectReview{Status: authnv1.SelfSubjectReviewStatus{UserInfo: authnv1.UserInfo{Username: "alice"}}}, nil
			})
			sc := Scope{OnlyMine: true}
			err := sc.Resolve(context.Background(), cs, "https://203.0.113.7:6443", "gke_x")
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Resolve = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil || sc.Username != "alice" || sc.Local {
				t.Errorf("Resolve = %v, scope %+v: want alice on a remote cluster", err, sc)
			}
		})
	}
}
