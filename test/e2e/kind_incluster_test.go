package e2e

import (
	"context"

	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// installSelector is what hookback render --in-cluster labels everything
// with, and what hookback uninstall deletes.
const installSelector = "app.kubernetes.io/part-of=hookback,app.kubernetes.io/name=hookback"

// TestInClusterDeployment deploys the image named by HOOKBACK_E2E_IMAGE the
// way a user would, `hookback render --in-cluster | kubectl apply -f -`, on
// a cluster whose nodes run containers (kind, in CI through hack/e2e-kind):
// the Deployment's two replicas become ready, pod-name denies through the
// Service, the leader labels a pod, the Lease names a replica, deleting the
// leader hands the Lease and the controllers to another replica, and
// hookback uninstall removes everything labelled.
func TestInClusterDeployment(t *testing.T) {
	image := os.Getenv("HOOKBACK_E2E_IMAGE")
	if image == "" {
		t.Skip("skipped: set HOOKBACK_E2E_IMAGE to a hookback image the cluster's nodes have (hack/e2e-kind builds it, kind-loads it and sets it; docs/kind.md)")
	}
	requireRealNodes(t)
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Fatalf("kubectl is needed to apply the rendered install: %v", err)
	}
	ctx := context.Background()
	in := &inClusterInstall{ns: "hookback-kind-" + itoa(os.Getpid()%100000), workload: namespace(t)}
	out, errOut, code := hookback(t, env.kubeconfig, "render", "--in-cluster", "--install-namespace", in.ns, "--image", image,
		"--webhooks", "pod-name", "--controllers", "pod-name-label")
	if code != 0 {
		t.Fatalf("render --in-cluster exit %d: %s", code, errOut)
	}
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _, _ = hookback(t, env.kubeconfig, "uninstall", "--install-namespace", in.ns, "--wait", "30s")
		}
	})
	apply := exec.Command(kubectl, "--kubeconfig", env.kubeconfig, "apply", "-f", "-")
	apply.Stdin = strings.NewReader(out)
	if b, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, b)
	}

	pods := in.waitDeploymentReady(t)
	// The built-in template's policy: fail open, as on a laptop.
	in.checkRegistration(t, admissionregistrationv1.Ignore)
	eventually(t, "a denial by pod-name through the Service", func(ctx context.Context) (bool, error) {
		return true, in.denied(ctx)
	})
	in.waitLabelled(t, in.createPod(t, "before-takeover"))
	lead := in.leaseHolder(t, pods, "")
	t.Logf("replicas %v, leader %s", pods, lead)

	// The leader's pod deleted as a rollout or a node drain would: another
	// replica takes the Lease and the controllers.
	if err := env.client.CoreV1().Pods(in.ns).Delete(ctx, lead, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete leader pod %s: %v", lead, err)
	}
	next := in.leaseHolder(t, nil, lead)
	t.Logf("after deleting %s the Lease is held by %s (survivor of the two: %v)", lead, next, slices.Contains(pods, next))
	in.waitLabelled(t, in.createPod(t, "after-takeover"))
	if err := in.denied(ctx); err != nil {
		t.Errorf("after the takeover: %v", err)
	}

	out, errOut, code = hookback(t, env.kubeconfig, "uninstall", "--install-namespace", in.ns, "--wait", "30s")
	if code != 0 {
		t.Fatalf("uninstall exit %d:\n%s%s", code, out, errOut)
	}
	uninstalled = true
	in.checkUninstalled(t)
}

// requireRealNodes skips on hack/cluster's control plane: its kwok nodes
// report pods Running without running a container, so the image would
// never serve (TestInClusterTwoReplicas covers serve there).
func requireRealNodes(t *testing.T) {
	t.Helper()
	if env.local {
		t.Skip("skipped on the local control plane: kwok's fake nodes run no containers; TestInClusterTwoReplicas runs serve there")
	}
}

// waitDeploymentReady waits for the rendered Deployment's two replicas to
// be updated and ready, and returns their pods' names.
func (in *inClusterInstall) waitDeploymentReady(t *testing.T) []string {
	t.Helper()
	var names []string
	eventually(t, "deployment "+in.ns+"/hookback with 2 ready replicas", func(ctx context.Context) (bool, error) {
		d, err := env.client.AppsV1().Deployments(in.ns).Get(ctx, "hookback", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := d.Status
		if s.ObservedGeneration < d.Generation || s.UpdatedReplicas != 2 || s.ReadyReplicas != 2 || s.Replicas != 2 {
			return false, fmt.Errorf("replicas %d, updated %d, ready %d", s.Replicas, s.UpdatedReplicas, s.ReadyReplicas)
		}
		names = nil
		list, err := env.client.CoreV1().Pods(in.ns).List(ctx, metav1.ListOptions{LabelSelector: installSelector})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				names = append(names, p.Name)
			}
		}
		return len(names) == 2, fmt.Errorf("pods %v", names)
	})
	return names
}

// leaseHolder waits until the Lease names a live pod of the install, one
// of among when given, other than not, and returns it.
func (in *inClusterInstall) leaseHolder(t *testing.T, among []string, not string) string {
	t.Helper()
	var holder string
	eventually(t, "the Lease held by a live replica other than "+not, func(ctx context.Context) (bool, error) {
		l, err := env.client.CoordinationV1().Leases(in.ns).Get(ctx, "hookback", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder = ptr.Deref(l.Spec.HolderIdentity, "")
		if holder == "" || holder == not || (among != nil && !slices.Contains(among, holder)) {
			return false, fmt.Errorf("held by %q", holder)
		}
		p, err := env.client.CoreV1().Pods(in.ns).Get(ctx, holder, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp == nil, nil
	})
	return holder
}

// checkUninstalled checks that nothing labelled as the install is left:
// the cluster-scoped objects at once, the namespace (and so everything in
// it) once the apiserver finished deleting it.
func (in *inClusterInstall) checkUninstalled(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: installSelector}
	a, r := env.client.AdmissionregistrationV1(), env.client.RbacV1()
	left := map[string]func() (int, error){
		"validating webhook configurations": func() (int, error) {
			l, err := a.ValidatingWebhookConfigurations().List(ctx, sel)
			return lenItems(err, func() int { return len(l.Items) })
		},
		"mutating webhook configurations": func() (int, error) {
			l, err := a.MutatingWebhookConfigurations().List(ctx, sel)
			return lenItems(err, func() int { return len(l.Items) })
		},
		"cluster roles": func() (int, error) {
			l, err := r.ClusterRoles().List(ctx, sel)
			return lenItems(err, func() int { return len(l.Items) })
		},
		"cluster role bindings": func() (int, error) {
			l, err := r.ClusterRoleBindings().List(ctx, sel)
			return lenItems(err, func() int { return len(l.Items) })
		},
	}
	for what, count := range left {
		if n, err := count(); err != nil || n != 0 {
			t.Errorf("after uninstall: %d %s labelled %s left (%v)", n, what, installSelector, err)
		}
	}
	eventually(t, "namespace "+in.ns+" gone", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().Namespaces().Get(ctx, in.ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// lenItems is n() unless the List failed.
func lenItems(err error, n func() int) (int, error) {
	if err != nil {
		return 0, err
	}
	return n(), nil
}
