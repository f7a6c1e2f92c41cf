package e2e

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestRenderInCluster applies everything `hookback render --in-cluster`
// prints with kubectl apply --dry-run=server: the apiserver validates and
// admits every object (RBAC escalation checks, webhook configuration
// validation) without anything being written. The namespace is the test's,
// because a dry-run Namespace is not created for the objects inside it.
func TestRenderInCluster(t *testing.T) {
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Skip("no kubectl: ", err)
	}
	ns := namespace(t)
	tests := []struct {
		name string
		args []string
	}{
		{"every built-in", nil},
		// Not --cert-manager: its Issuer and Certificate need cert-manager's
		// CRDs, which this cluster does not have (the golden covers it).
		{"custom", []string{"--image", "registry.example/hookback:v1", "--replicas", "3",
			"--webhooks", "pod-name,pod-lifespan", "--controllers", "none"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := hookback(t, env.kubeconfig, append([]string{"render", "--in-cluster", "--install-namespace", ns}, tt.args...)...)
			if code != 0 {
				t.Fatalf("hookback render --in-cluster exit %d: %s", code, errOut)
			}
			cmd := exec.Command(kubectl, "--kubeconfig", env.kubeconfig, "apply", "--dry-run=server", "-o", "name", "-f", "-")
			cmd.Stdin = strings.NewReader(out)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("kubectl apply --dry-run=server: %v\n%s\n%s", err, stdout.String(), stderr.String())
			}
			for _, want := range []string{"namespace/" + ns, "serviceaccount/hookback", "clusterrole.rbac.authorization.k8s.io/hookback",
				"clusterrolebinding.rbac.authorization.k8s.io/hookback", "role.rbac.authorization.k8s.io/hookback",
				"rolebinding.rbac.authorization.k8s.io/hookback", "deployment.apps/hookback", "poddisruptionbudget.policy/hookback",
				"service/hookback", "mutatingwebhookconfiguration.admissionregistration.k8s.io/hookback-mutating",
				"validatingwebhookconfiguration.admissionregistration.k8s.io/hookback-validating"} {
				if !strings.Contains(stdout.String()+"\n", want+"\n") {
					t.Errorf("kubectl did not accept %s:\n%s", want, stdout.String())
				}
			}
		})
	}
}
