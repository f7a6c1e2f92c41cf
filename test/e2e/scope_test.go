package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// actingAs writes a kubeconfig whose user is the admin impersonating user,
// bound to cluster-admin for the test, and returns it with a client.
func actingAs(t *testing.T, user string) (string, kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	crb, err := env.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-scope-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	cfg, err := clientcmd.LoadFromFile(env.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		a.Impersonate = user
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return path, cs
}

// podAs creates a pod called name in ns with client; the webhooks allow it.
func podAs(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	_, err := client.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{whAppContainer()}, TerminationGracePeriodSeconds: ptr.To[int64](0)},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
}

// recorded lists the pods (namespace/name) of the reviews in dir.
func recorded(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_pod-name_create_*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		parts := strings.Split(filepath.Base(f), "_")
		out = append(out, parts[3]+"/"+parts[4])
	}
	return out
}

// TestScopeTwoDevelopersAndAColleague runs two sessions as two users on one
// cluster, with a third identity as a colleague: alice's --namespace keeps
// every other namespace away from her laptop, and bob's --only-mine keeps
// everyone else's requests away from his, even in the namespace he works in.
// The review counters and recordings show what reached each, after the
// last request each must see has reached it.
func TestScopeTwoDevelopersAndAColleague(t *testing.T) {
	requireLocal(t, "binds cluster-admin to test users and impersonates them")
	mine, other := namespace(t), namespace(t)
	aliceKC, _ := actingAs(t, "e2e-alice")
	bobKC, bob := actingAs(t, "e2e-bob")
	_, carol := actingAs(t, "e2e-carol")
	aliceDir, bobDir := t.TempDir(), t.TempDir()
	alice := startWith(t, aliceKC, "--webhooks", "pod-name", "--controllers", "none", "--namespace", mine, "--record-dir", aliceDir)
	bobP := startWith(t, bobKC, "--webhooks", "pod-name", "--controllers", "none", "--only-mine", "--record-dir", bobDir)
	alice.ready(t)
	bobP.ready(t)
	if !strings.Contains(bobP.stdout.String(), "scope:    only requests by e2e-bob") {
		t.Errorf("bob's banner does not show his scope:\n%s", bobP.stdout.String())
	}

	// What must not reach: first, so that what must reach, after, proves it
	// would have by then.
	podAs(t, carol, other, "carol-other") // neither: other namespace, not bob
	podAs(t, bob, other, "bob-other")     // bob's only
	podAs(t, carol, mine, "carol-mine")   // alice's only
	podAs(t, bob, mine, "bob-mine")       // both
	alice.whWaitLogLine(t, "msg=admission", "webhook=pod-name", "namespace="+mine, "name=bob-mine ", "decision=allowed")
	bobP.whWaitLogLine(t, "msg=admission", "webhook=pod-name", "namespace="+mine, "name=bob-mine ", "decision=allowed")

	allowed := `hookback_admission_requests_total{decision="allowed",webhook="pod-name"}`
	for _, c := range []struct {
		who   string
		p     *proc
		dir   string
		count float64
		want  []string
	}{
		{"alice (--namespace " + mine + ")", alice, aliceDir, 2, []string{mine + "/carol-mine", mine + "/bob-mine"}},
		{"bob (--only-mine)", bobP, bobDir, 2, []string{other + "/bob-other", mine + "/bob-mine"}},
	} {
		if v := metricAt("http://"+c.p.health, allowed); v != c.count {
			t.Errorf("%s: %s = %v, want %v", c.who, allowed, v, c.count)
		}
		var got []string
		// A review is recorded just after it is answered.
		eventually(t, c.who+"'s recordings", func(context.Context) (bool, error) {
			got = recorded(t, c.dir)
			return len(got) >= len(c.want), nil
		})
		if len(got) != len(c.want) {
			t.Errorf("%s recorded %v, want exactly %v", c.who, got, c.want)
		}
		for _, w := range c.want {
			if !strings.Contains(strings.Join(got, " "), w) {
				t.Errorf("%s recorded %v, want %s among them", c.who, got, w)
			}
		}
	}
}

// TestScopeSeed002OptIn: pod-name does nothing in a namespace without seed
// 002's label (proved by the review counter of a webhook that is called
// there, pod-sidecar), and denies in a labelled one.
func TestScopeSeed002OptIn(t *testing.T) {
	t.Parallel()
	plain, labelled := namespaceLabelled(t, nil), namespace(t)
	p := start(t, "--webhooks", "pod-name,pod-sidecar", "--controllers", "none")
	p.ready(t)
	ctx := context.Background()
	if _, err := whCreatePod(ctx, plain, metav1.ObjectMeta{Name: "offensive-plain"}); err != nil {
		t.Fatalf("pod offensive-plain in unlabelled %s: %v, want admitted (pod-name is opt-in)", plain, err)
	}
	// The apiserver called hookback for that pod (pod-sidecar selects every
	// namespace), but not pod-name.
	p.whWaitLogLine(t, "msg=admission", "webhook=pod-sidecar", "namespace="+plain, "name=offensive-plain ")
	if line := logLine(p.stderr.String(), "webhook=pod-name resource=pods operation=CREATE namespace="+plain); line != "" {
		t.Errorf("pod-name was called in the unlabelled namespace: %s", line)
	}
	_, err := whCreatePod(ctx, labelled, metav1.ObjectMeta{Name: "offensive-labelled"})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod name contains "offensive"`) {
		t.Fatalf("pod offensive-labelled in labelled %s: err = %v, want denied by pod-name", labelled, err)
	}
}

// TestScopeDriftReappliedOnceThenLeft edits and then deletes a configuration
// the session registered, as someone else would: the edit is logged with
// the field and its manager and re-applied; the delete, a second revert, is
// left, with the command that restores it, which then works.
func TestScopeDriftReappliedOnceThenLeft(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	p := start(t, "--webhooks", "pod-name", "--controllers", "none")
	p.ready(t)
	ctx := context.Background()
	api := env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	name := "hookback-validating-" + p.session
	vwc, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fail := admissionv1.Fail
	vwc.Webhooks[0].FailurePolicy = &fail
	if _, err := api.Update(ctx, vwc, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	p.whWaitLogLine(t, "changed by someone else; re-applied", "fields=webhooks[pod-name.hookback.dev].failurePolicy", "manager=kubectl-edit")
	eventually(t, "failurePolicy Ignore again", func(ctx context.Context) (bool, error) {
		v, err := api.Get(ctx, name, metav1.GetOptions{})
		return err == nil && *v.Webhooks[0].FailurePolicy == admissionv1.Ignore, err
	})

	if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	line := p.whWaitLogLine(t, "deleted (or its hookback labels removed) by someone else a second time", "restore=")
	// Still serving: the session goes on.
	if p.exited() {
		t.Fatalf("hookback exited after the second revert:\n%s", p.stderr.String())
	}
	_, restore, ok := strings.Cut(line, `restore="`)
	restore, _, _ = strings.Cut(restore, `"`)
	_, args, found := strings.Cut(restore, "kubectl apply --server-side")
	if !ok || !found {
		t.Fatalf("no restore command in %q", line)
	}
	kubectl, err := ctlKubectlPath()
	if err != nil {
		t.Skip("no kubectl to run the restore command: ", err)
	}
	out, err := kubectlRun(kubectl, append([]string{"apply", "--server-side"}, strings.Fields(args)...)...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", restore, err, out)
	}
	_, err = whCreatePod(ctx, ns, metav1.ObjectMeta{Name: "offensive-restored"})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("after the restore command, pod offensive-restored: err = %v, want denied by pod-name", err)
	}
}

func kubectlRun(kubectl string, args ...string) (string, error) {
	cmd := exec.Command(kubectl, append([]string{"--kubeconfig", env.kubeconfig}, args...)...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

// TestScopePodNameUpdate: --namespace opts an unlabelled namespace in to
// pod-name, and the webhook's UPDATE path judges a pod created before it
// started: a metadata-only update is allowed, a spec change denied.
func TestScopePodNameUpdate(t *testing.T) {
	t.Parallel()
	ns := namespaceLabelled(t, nil) // no other session's pod-name selects it
	ctx := context.Background()
	if _, err := whCreatePod(ctx, ns, metav1.ObjectMeta{Name: "offensive-legacy"}); err != nil {
		t.Fatalf("pod offensive-legacy before hookback: %v", err)
	}
	p := start(t, "--webhooks", "pod-name", "--controllers", "none", "--namespace", ns)
	p.ready(t)
	pods := env.client.CoreV1().Pods(ns)
	// kwok writes the pod's status meanwhile: retry a stale read.
	update := func(change func(*corev1.Pod)) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			pod, err := pods.Get(ctx, "offensive-legacy", metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(pod)
			_, err = pods.Update(ctx, pod, metav1.UpdateOptions{})
			return err
		})
	}
	if err := update(func(p *corev1.Pod) { p.Labels = map[string]string{"touched": "yes"} }); err != nil {
		t.Fatalf("label offensive-legacy: %v, want allowed (metadata only)", err)
	}
	p.whWaitLogLine(t, "msg=admission", "webhook=pod-name", "operation=UPDATE", "namespace="+ns, "name=offensive-legacy ", "decision=allowed")
	err := update(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/app:changed" })
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod name contains "offensive"`) {
		t.Fatalf("spec change of offensive-legacy: err = %v, want denied by pod-name", err)
	}
	p.whWaitLogLine(t, "msg=admission", "webhook=pod-name", "operation=UPDATE", "namespace="+ns, "name=offensive-legacy ", "decision=denied")
}
