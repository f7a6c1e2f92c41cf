package incluster

import (
	"os"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/rbac"
)

func template(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../webhook-url.yaml.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func all(t *testing.T) (hooks, ctls []string) {
	t.Helper()
	hooks, err := assembly.SelectWebhooks([]string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	ctls, err = assembly.SelectControllers([]string{"all"})
	if err != nil {
		t.Fatal(err)
	}
	return hooks, ctls
}

// cases are the renderings the tests check; the output itself is
// golden-tested once, through the command (cli TestRenderInCluster).
func cases(t *testing.T) map[string]Options {
	hooks, ctls := all(t)
	return map[string]Options{
		"default": {Namespace: DefaultNamespace, Image: "ghcr.io/hookback/hookback:latest", Replicas: DefaultReplicas,
			Webhooks: hooks, Controllers: ctls, Template: template(t)},
		"custom": {Namespace: "webhooks", Image: "registry.example/hookback:v1.2.3", Replicas: 3,
			Webhooks: []string{"pod-name", "pod-lifespan"}, Controllers: nil, Template: template(t), CertManager: true},
	}
}

// TestInClusterGrantsEveryDeclaredPermission checks the rendered roles
// against each declaration of the selected built-ins, as an authorizer would.
func TestInClusterGrantsEveryDeclaredPermission(t *testing.T) {
	for name, o := range cases(t) {
		t.Run(name, func(t *testing.T) {
			objs, err := InCluster(o)
			if err != nil {
				t.Fatal(err)
			}
			perms, err := ServePermissions(o.Namespace, !o.CertManager, o.Webhooks, o.Controllers)
			if err != nil {
				t.Fatal(err)
			}
			byNS := rulesByNamespace(objs)
			for _, p := range perms {
				if !granted(byNS[""], p) && !granted(byNS[p.Namespace], p) {
					t.Errorf("not granted: %+v", p)
				}
			}
			for _, verb := range []string{"get", "create", "update"} {
				p := rbac.Permission{Verb: verb, Group: "coordination.k8s.io", Resource: "leases", Namespace: o.Namespace, Name: LeaseName}
				if !granted(byNS[o.Namespace], p) {
					t.Errorf("leader election: %+v not granted in %s", p, o.Namespace)
				}
			}
			// A pod never deregisters nor runs a laptop session's canary:
			// those grants would only widen what a compromised pod can do.
			for _, p := range []rbac.Permission{
				{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"},
				{Verb: "delete", Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"},
				{Verb: "create", Resource: "configmaps", Namespace: o.Namespace},
				{Verb: "delete", Group: "coordination.k8s.io", Resource: "leases", Namespace: o.Namespace, Name: LeaseName},
				{Verb: "get", Resource: "secrets", Namespace: o.Namespace, Name: "someone-elses"},
			} {
				if granted(byNS[""], p) || granted(byNS[p.Namespace], p) {
					t.Errorf("granted although serve never needs it: %s", p)
				}
			}
		})
	}
}

func rulesByNamespace(objs []runtime.Object) map[string][]rbacv1.PolicyRule {
	out := map[string][]rbacv1.PolicyRule{}
	for _, obj := range objs {
		switch r := obj.(type) {
		case *rbacv1.ClusterRole:
			out[""] = append(out[""], r.Rules...)
		case *rbacv1.Role:
			out[r.Namespace] = append(out[r.Namespace], r.Rules...)
		}
	}
	return out
}

func granted(rules []rbacv1.PolicyRule, p rbac.Permission) bool {
	res := p.Resource
	if p.Subresource != "" {
		res += "/" + p.Subresource
	}
	for _, r := range rules {
		if slices.Contains(r.Verbs, p.Verb) && slices.Contains(r.APIGroups, p.Group) && slices.Contains(r.Resources, res) &&
			(len(r.ResourceNames) == 0 || slices.Contains(r.ResourceNames, p.Name)) {
			return true
		}
	}
	return false
}

// TestDeploymentSecurityContext checks every hardening field is set, so a
// refactor cannot quietly drop one.
func TestDeploymentSecurityContext(t *testing.T) {
	objs, err := InCluster(cases(t)["default"])
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	for _, obj := range objs {
		if dd, ok := obj.(*appsv1.Deployment); ok {
			d = dd
		}
	}
	if d == nil {
		t.Fatal("no Deployment")
	}
	pod := d.Spec.Template.Spec
	sc := pod.Containers[0].SecurityContext
	checks := []struct {
		name string
		ok   bool
	}{
		{"pod runAsNonRoot", pod.SecurityContext.RunAsNonRoot != nil && *pod.SecurityContext.RunAsNonRoot},
		{"pod seccomp RuntimeDefault", pod.SecurityContext.SeccompProfile != nil && pod.SecurityContext.SeccompProfile.Type == "RuntimeDefault"},
		{"runAsNonRoot", sc.RunAsNonRoot != nil && *sc.RunAsNonRoot},
		{"runAsUser 65532", sc.RunAsUser != nil && *sc.RunAsUser == 65532},
		{"readOnlyRootFilesystem", sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem},
		{"allowPrivilegeEscalation false", sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation},
		{"capabilities drop ALL", sc.Capabilities != nil && slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"})},
		{"seccomp RuntimeDefault", sc.SeccompProfile != nil && sc.SeccompProfile.Type == "RuntimeDefault"},
		{"automountServiceAccountToken", pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok {
				t.Errorf("%s not set", c.name)
			}
		})
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		errs int
	}{
		{"valid", Options{Namespace: "ns", Image: "i", Replicas: 1, Template: []byte("x")}, 0},
		{"everything wrong", Options{Namespace: "Bad_NS", Replicas: 0}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			n := 0
			if err != nil {
				n = len(err.(interface{ Unwrap() []error }).Unwrap())
			}
			if n != tt.errs {
				t.Errorf("Validate() = %v, want %d problems", err, tt.errs)
			}
		})
	}
}

// TestCustomTemplateReachesThePods checks that a --template given to render
// is what the pods apply: shipped in a ConfigMap, mounted, and passed to
// serve; without one, the pods use the image's.
func TestCustomTemplateReachesThePods(t *testing.T) {
	for _, custom := range []bool{true, false} {
		t.Run(map[bool]string{true: "custom", false: "built in"}[custom], func(t *testing.T) {
			o := cases(t)["default"]
			o.CustomTemplate = custom
			objs, err := InCluster(o)
			if err != nil {
				t.Fatal(err)
			}
			var cm *corev1.ConfigMap
			var dep *appsv1.Deployment
			for _, obj := range objs {
				switch x := obj.(type) {
				case *corev1.ConfigMap:
					cm = x
				case *appsv1.Deployment:
					dep = x
				}
			}
			args := dep.Spec.Template.Spec.Containers[0].Args
			hasFlag := slices.Contains(args, "--template")
			if !custom {
				if cm != nil || hasFlag {
					t.Errorf("built-in template: ConfigMap %v, args %v", cm != nil, args)
				}
				return
			}
			if cm == nil || cm.Data[templateKey] != string(o.Template) {
				t.Fatal("no ConfigMap holding the template")
			}
			if i := slices.Index(args, "--template"); i < 0 || args[i+1] != templateDir+"/"+templateKey {
				t.Errorf("serve args %v lack --template %s/%s", args, templateDir, templateKey)
			}
			if !slices.ContainsFunc(dep.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool {
				return v.ConfigMap != nil && v.ConfigMap.Name == cm.Name
			}) {
				t.Error("the ConfigMap is not mounted")
			}
		})
	}
}
