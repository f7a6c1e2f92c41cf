package session

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/rbac"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

var updateDocs = flag.Bool("update", false, "rewrite docs/rbac.yaml from the declared permissions")

// docsRBAC renders what docs/rbac.yaml must hold: every built-in, the
// default lease namespace, the default name and subject.
func docsRBAC(t *testing.T) []byte {
	t.Helper()
	hooks, _ := assembly.SelectWebhooks([]string{"all"})
	ctls, _ := assembly.SelectControllers([]string{"all"})
	out, err := plan.RBACYAML(completed(t, plan.Options{LeaseNamespace: "default", Webhooks: hooks, Controllers: ctls}), "hookback-developer",
		[]rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "hookback-developers"}})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRBACDocMatchesDeclarations fails when a part declares a permission
// docs/rbac.yaml does not grant, or the file grants one nobody declares.
// go test ./session -run TestRBACDoc -update rewrites it.
func TestRBACDocMatchesDeclarations(t *testing.T) {
	path := filepath.Join("..", "docs", "rbac.yaml")
	want := docsRBAC(t)
	if *updateDocs {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./session -run TestRBACDoc -update writes it)", err)
	}
	if string(got) != string(want) {
		t.Fatalf("docs/rbac.yaml differs from the declared permissions; run go test ./session -run TestRBACDoc -update\n--- want\n%s", want)
	}
}

// TestRBACGrantsEveryDeclaredPermission checks the role against each
// declaration as an RBAC authorizer would: a rule must match verb, group,
// resource[/subresource], and name when the rule restricts names.
func TestRBACGrantsEveryDeclaredPermission(t *testing.T) {
	hooks, _ := assembly.SelectWebhooks([]string{"all"})
	ctls, _ := assembly.SelectControllers([]string{"all"})
	cfg := plan.Options{LeaseNamespace: "hookback-leases", Webhooks: hooks, Controllers: ctls}
	perms, err := plan.Permissions(completed(t, cfg))
	if err != nil {
		t.Fatal(err)
	}
	r, err := plan.RBAC(completed(t, cfg), "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range perms {
		rules := r.ClusterRole.Rules
		if p.Namespace != "" {
			if len(r.Roles) != 1 || r.Roles[0].Namespace != p.Namespace {
				t.Fatalf("no Role in %s for %s", p.Namespace, p)
			}
			rules = r.Roles[0].Rules
		}
		if !granted(rules, p) {
			t.Errorf("%s in %q is declared but not granted", p, p.Namespace)
		}
	}
	b, err := yaml.Marshal(r.ClusterRole)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		t.Fatal("empty ClusterRole")
	}
}

func granted(rules []rbacv1.PolicyRule, p rbac.Permission) bool {
	res := p.Resource
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	for _, r := range rules {
		if slices.Contains(r.Verbs, p.Verb) && slices.Contains(r.APIGroups, p.Group) && slices.Contains(r.Resources, res) &&
			(len(r.ResourceNames) == 0 || (p.Name != "" && slices.Contains(r.ResourceNames, p.Name))) {
			return true
		}
	}
	return false
}
