package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// kubectlApply applies manifests with the cluster's kubectl as the admin.
func kubectlApply(t *testing.T, manifests []byte) {
	t.Helper()
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubectl, "--kubeconfig", env.kubeconfig, "apply", "-f", "-")
	cmd.Stdin = bytes.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
}

// rbacFor runs `hookback rbac` for a ServiceAccount, with names unique to
// the test, and deletes the cluster-scoped objects at the end.
func rbacFor(t *testing.T, ns, sa string) []byte {
	t.Helper()
	name := "hookback-e2e-" + ns + "-" + sa
	out, errOut, code := hookback(t, env.kubeconfig, "rbac", "--lease-namespace", ns,
		"--subject", "serviceaccount:"+ns+"/"+sa, "--rbac-name", name)
	if code != 0 {
		t.Fatalf("hookback rbac exit %d: %s", code, errOut)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.client.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = env.client.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return []byte(out)
}

// TestStartWithExactlyTheRBACRole runs hookback start, every built-in, as a
// ServiceAccount bound to nothing but what `hookback rbac` prints (the
// generator of docs/rbac.yaml): it gets verified, serves, and leaves clean.
func TestStartWithExactlyTheRBACRole(t *testing.T) {
	ns := namespace(t)
	kc := tokenKubeconfig(t, ns, "developer")
	kubectlApply(t, rbacFor(t, ns, "developer"))

	p := startEnv(t, []string{"KUBECONFIG=" + kc, "PATH=/usr/bin:/bin", "HOME=" + t.TempDir()},
		"--lease-namespace", ns, "--webhooks", "all", "--controllers", "all")
	p.ready(t)
	p.signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, p.stderr.String())
	}
	logs := p.stdout.String() + p.stderr.String()
	for _, bad := range []string{"forbidden", "Forbidden", "level=ERROR"} {
		if strings.Contains(logs, bad) {
			t.Errorf("the run logged %q with exactly the generated role:\n%s", bad, logs)
		}
	}
	eventually(t, "session objects removed", func(ctx context.Context) (bool, error) {
		n, err := sessionObjects(ctx, p.session)
		return n == 0, err
	})
}

// TestCheckNamesTheMissingVerb binds the generated role less one verb and
// expects check to name exactly that verb.
func TestCheckNamesTheMissingVerb(t *testing.T) {
	ns := namespace(t)
	kc := tokenKubeconfig(t, ns, "short")
	var docs [][]byte
	for _, d := range bytes.Split(rbacFor(t, ns, "short"), []byte("\n---\n")) {
		var role rbacv1.ClusterRole
		if err := yaml.Unmarshal(d, &role); err == nil && role.Kind == "ClusterRole" {
			for i, r := range role.Rules {
				if slices.Contains(r.Resources, "validatingwebhookconfigurations") {
					role.Rules[i].Verbs = slices.DeleteFunc(r.Verbs, func(v string) bool { return v == "delete" })
				}
			}
			if d, err = yaml.Marshal(role); err != nil {
				t.Fatal(err)
			}
		}
		docs = append(docs, d)
	}
	kubectlApply(t, bytes.Join(docs, []byte("\n---\n")))

	out, errOut, code := hookback(t, kc, "check", "--lease-namespace", ns)
	if code != 2 {
		t.Fatalf("exit = %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	summary := strings.TrimSpace(errOut)
	if want := "delete validatingwebhookconfigurations.admissionregistration.k8s.io"; !strings.Contains(summary, want) {
		t.Errorf("summary does not name %q: %s", want, summary)
	}
	if n := strings.Count(out, " NO "); n != 1 {
		t.Errorf("%d permissions denied, want exactly the one removed:\n%s", n, out)
	}
}
