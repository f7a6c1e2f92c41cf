package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
)

// TestTwoDevelopersOneCluster runs two sessions with overlapping built-ins
// and different templates. Their objects never share a name; one stopping
// leaves the other registered, serving and ready, and the shared objects
// (exec RBAC, node CPU) in place; after both crash, `cleanup --all` from a
// third process removes both sessions and then the shared objects.
// Not parallel: cleanup --all removes every session of the cluster.
func TestTwoDevelopersOneCluster(t *testing.T) {
	requireLocal(t, whyKwokHeartbeats+"; "+whyKwokRuns)
	ctx := context.Background()
	ns := namespace(t)
	node := kwokNode(t)
	origAlloc, origCap := originalCPU(t, node)
	ctlDeleteExecRBAC(t)
	t.Cleanup(func() {
		ctlDeleteExecRBAC(t)
		restoreNode(t, node.Name, origAlloc, origCap)
	})
	// Bob's template: the default one with other timeouts.
	tmpl, err := os.ReadFile(repoPath("webhook-url.yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	bobTemplate := filepath.Join(t.TempDir(), "bob.yaml.tmpl")
	if err := os.WriteFile(bobTemplate, []byte(strings.ReplaceAll(string(tmpl), "timeoutSeconds: 5", "timeoutSeconds: 7")), 0o644); err != nil {
		t.Fatal(err)
	}
	alice := start(t, "--webhooks", "pod-name,node-status", "--controllers", controllers.ExecRBACName)
	bob := start(t, "--webhooks", "pod-name,pod-lifespan,node-status", "--controllers", controllers.ExecRBACName, "--template", bobTemplate)
	alice.ready(t)
	bob.ready(t)

	names := map[string][]string{alice.session: sessionNames(t, alice.session), bob.session: sessionNames(t, bob.session)}
	for s, list := range names {
		if len(list) < 2 {
			t.Fatalf("session %s has objects %v, want its configurations and Lease", s, list)
		}
		for _, n := range list {
			if !strings.Contains(n, s) {
				t.Errorf("object %s of session %s does not carry its session", n, s)
			}
		}
	}
	for _, n := range names[alice.session] {
		if slices.Contains(names[bob.session], n) {
			t.Errorf("both sessions own an object named %s", n)
		}
	}

	// Both are called, and both use the shared objects.
	twoDevsDeniedPod(t, ns, alice, bob)
	ctlBarePod(t, ns, "agent", "", map[string]string{controllers.ExecAgentAnnotation: "true"})
	ctlWaitBinding(t, ns, []string{ns + "/default"})
	eventually(t, "node "+node.Name+" oversold", func(ctx context.Context) (bool, error) {
		n, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		return err == nil && n.Annotations[webhooks.AnnotationCPUOversell] != "", err
	})

	// Alice stops: her objects go, Bob's stay, and so do the shared ones.
	alice.signal(syscall.SIGINT)
	if code := alice.wait(t); code != 0 {
		t.Fatalf("alice exit %d\n%s", code, alice.stderr.String())
	}
	for _, part := range []string{controllers.ExecRBACName, webhooks.NameNodeStatus} {
		if _, ok := whLogLine(alice.stderr.String(), "another live session runs this part", "part="+part); !ok {
			t.Errorf("alice's exit did not leave %s to bob:\n%s", part, alice.stderr.String())
		}
	}
	if n, err := sessionObjects(ctx, alice.session); err != nil || n != 0 {
		t.Errorf("alice left %d objects (%v)", n, err)
	}
	if got := sessionNames(t, bob.session); !slices.Equal(got, names[bob.session]) {
		t.Errorf("bob's objects after alice stopped: %v, want %v", got, names[bob.session])
	}
	if _, err := env.client.RbacV1().RoleBindings(ns).Get(ctx, controllers.ExecRBACObjectName, metav1.GetOptions{}); err != nil {
		t.Errorf("exec RoleBinding after alice stopped: %v", err)
	}
	n, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil || n.Annotations[webhooks.AnnotationCPUOversell] == "" {
		t.Errorf("node restored while bob still runs node-status (%v)", err)
	}
	bob.ready(t)
	twoDevsDeniedPod(t, ns, bob)

	// Both crash; a third developer cleans the cluster.
	alice = start(t, "--webhooks", "pod-name,node-status", "--controllers", controllers.ExecRBACName)
	alice.ready(t)
	for _, p := range []*proc{alice, bob} {
		p.signal(syscall.SIGKILL)
		p.wait(t)
	}
	out, errOut, code := hookback(t, env.kubeconfig, "cleanup", "--all")
	if code != 0 {
		t.Fatalf("cleanup --all: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, s := range []string{alice.session, bob.session} {
		if n, err := sessionObjects(ctx, s); err != nil || n != 0 {
			t.Errorf("session %s has %d objects after cleanup --all (%v)", s, n, err)
		}
		if !strings.Contains(out, s) {
			t.Errorf("cleanup --all did not report session %s:\n%s", s, out)
		}
	}
	if _, err := env.client.RbacV1().RoleBindings(ns).Get(ctx, controllers.ExecRBACObjectName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("exec RoleBinding after cleanup --all: err = %v, want NotFound", err)
	}
	if n, err := env.client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil || n.Annotations[webhooks.AnnotationCPUOversell] != "" {
		t.Errorf("node not restored by cleanup --all (%v)", err)
	}
}

// sessionNames lists the names of a session's configurations and Leases,
// sorted.
func sessionNames(t *testing.T, session string) []string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: managedBy + ",hookback.dev/session=" + session}
	var out []string
	m, err := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range m.Items {
		out = append(out, "mutating/"+o.Name)
	}
	v, err := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range v.Items {
		out = append(out, "validating/"+o.Name)
	}
	l, err := env.client.CoordinationV1().Leases("").List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range l.Items {
		out = append(out, "lease/"+o.Namespace+"/"+o.Name)
	}
	slices.Sort(out)
	return out
}

// twoDevsDeniedPod creates (dry-run) a pod with a banned name and expects a
// denial, with an admission line in every given session's log.
func twoDevsDeniedPod(t *testing.T, ns string, sessions ...*proc) {
	t.Helper()
	name := "offensive-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + itoa(len(sessions))
	_, err := env.client.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{whAppContainer()}},
	}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Fatalf("create pod %s: err = %v, want a denial", name, err)
	}
	for _, p := range sessions {
		p.whWaitLogLine(t, "webhook=pod-name", "name="+name, "decision=denied")
	}
}
