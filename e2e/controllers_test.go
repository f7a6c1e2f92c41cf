package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/controller"
)

// Tests of the built-in controllers (controller/), each run alone in a
// hookback started with --webhooks none, against the real apiserver. The
// exec-rbac ones are in controllers_execrbac_test.go. None of these tests
// calls t.Parallel.

// ctlArgs start hookback with no webhooks and only the named controllers.
func ctlArgs(controllers string) []string {
	return []string{"--webhooks", "none", "--controllers", controllers}
}

// ctlPodSpec is the spec of every test pod: one container kwok never pulls,
// and no grace period so that deleted pods go away at once.
func ctlPodSpec(serviceAccount string) corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName:            serviceAccount,
		Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:e2e"}},
		TerminationGracePeriodSeconds: ptr.To[int64](0),
	}
}

// ctlDeployment creates a Deployment whose pods are labelled app=name and
// carry annotations; the apiserver generates the pods' names.
func ctlDeployment(t *testing.T, ns, name string, replicas int32, serviceAccount string, annotations map[string]string) {
	t.Helper()
	labels := map[string]string{"app": name}
	_, err := env.client.AppsV1().Deployments(ns).Create(context.Background(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec:       ctlPodSpec(serviceAccount),
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment %s/%s: %v", ns, name, err)
	}
}

// ctlWaitPods waits until exactly n live (not terminating) pods match the
// label selector and every one of them satisfies ok, and returns them.
func ctlWaitPods(t *testing.T, ns, selector string, n int, what string, ok func(*corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	return ctlWaitPodsList(t, ns, metav1.ListOptions{LabelSelector: selector}, n, what, ok)
}

func ctlWaitPodsList(t *testing.T, ns string, opts metav1.ListOptions, n int, what string, ok func(*corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	sel := opts.LabelSelector + opts.FieldSelector
	eventually(t, fmt.Sprintf("%d pods %s in %s to be %s", n, sel, ns, what), func(ctx context.Context) (bool, error) {
		list, err := env.client.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return false, err
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil {
				pods = append(pods, p)
			}
		}
		if len(pods) != n {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		for i := range pods {
			if !ok(&pods[i]) {
				return false, fmt.Errorf("pod %s is not %s yet", pods[i].Name, what)
			}
		}
		return true, nil
	})
	return pods
}

// ctlBarePod creates a pod without a controller and waits until it runs. kwok
// writes its status once on scheduling and once when it runs, and then leaves
// it alone: from then on only the test and hookback write the pod.
func ctlBarePod(t *testing.T, ns, name, serviceAccount string, annotations map[string]string) *corev1.Pod {
	t.Helper()
	_, err := env.client.CoreV1().Pods(ns).Create(context.Background(), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec:       ctlPodSpec(serviceAccount),
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", ns, name, err)
	}
	return &ctlWaitPodsList(t, ns, metav1.ListOptions{FieldSelector: "metadata.name=" + name}, 1, "running", ctlRunning)[0]
}

func ctlRunning(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

// ctlAnnotate sets one annotation with a merge patch on the pod's
// annotations, which is what `kubectl annotate --overwrite` sends.
func ctlAnnotate(t *testing.T, ns, pod, key, value string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{key: value}}})
	if _, err := env.client.CoreV1().Pods(ns).Patch(context.Background(), pod, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate pod %s/%s %s=%s: %v", ns, pod, key, value, err)
	}
}

// ctlLabelled waits until the pod's pod-name label is its name (want true) or
// absent (want false), and returns the pod.
func ctlLabelled(t *testing.T, ns, name string, want bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	what := "labelled " + controller.PodNameLabel + "=" + name
	if !want {
		what = "without label " + controller.PodNameLabel
	}
	eventually(t, "pod "+ns+"/"+name+" "+what, func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		v, has := pod.Labels[controller.PodNameLabel]
		if want {
			return has && v == name, nil
		}
		return !has, nil
	})
	return pod
}

// ctlQueueAdds reads workqueue_adds_total of one controller's queue from
// hookback's /metrics.
func ctlQueueAdds(t *testing.T, p *proc, name string) int {
	t.Helper()
	resp, err := http.Get("http://" + p.health + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	prefix := `workqueue_adds_total{name="` + name + `"} `
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("parse %q: %v", sc.Text(), err)
			}
			return int(f)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	t.Fatalf("/metrics has no %s", strings.TrimSpace(prefix))
	return 0
}

func TestControllerPodNameLabel(t *testing.T) {
	ns := namespace(t)
	p := start(t, ctlArgs(controller.PodNameLabelName)...)
	// A pod the controller has no business with: used below to prove that
	// the controller ignores its own writes.
	bystander := ctlBarePod(t, ns, "bystander", "", nil)
	p.ready(t)

	const replicas = 3
	ctlDeployment(t, ns, "web", replicas, "", map[string]string{controller.AddPodNameLabelAnnotation: "true"})
	pods := ctlWaitPods(t, ns, "app=web", replicas, "running and labelled with their own name", func(p *corev1.Pod) bool {
		return ctlRunning(p) && p.Labels[controller.PodNameLabel] == p.Name
	})
	for _, pod := range pods {
		// The names are the apiserver's (ReplicaSet generateName), which is
		// why a webhook could not have done this.
		if pod.GenerateName == "" || !strings.HasPrefix(pod.Name, pod.GenerateName) {
			t.Errorf("pod %s: name not generated (generateName %q)", pod.Name, pod.GenerateName)
		}
	}

	// `kubectl annotate --overwrite pod X padok.fr/add-pod-name-label=false`
	// removes X's label and no other.
	x, others := pods[0], pods[1:]
	ctlAnnotate(t, ns, x.Name, controller.AddPodNameLabelAnnotation, "false")
	ctlLabelled(t, ns, x.Name, false)

	// No hot loop: the controller must not react to its own patches.
	//
	// Every reaction goes through the workqueue, and workqueue_adds_total
	// counts the keys queued. Between two readings we make exactly three
	// changes that need work, waiting for each to be done before the next:
	// the bystander gets the annotation (label set), loses it (label
	// removed), then X gets it back (label set). So the count must grow by
	// exactly 3: a reaction to hookback's own patches of the bystander would
	// add more (so would one to its patch of X above, when that watch event
	// arrives after the first reading).
	//
	// Why this is not sleep-and-hope: the informer delivers pod events to the
	// controller in resourceVersion order. Each patch hookback makes is
	// followed, in that order, by the next annotation we write, because we
	// only write it after seeing the patch's result. When the controller has
	// acted on that next annotation, it has therefore already received the
	// watch event of its own patch, and any key that event queued is counted.
	// The bystander's two patches are both followed by a later change in the
	// window, so a reaction to either is caught. The bystander and the web
	// pods are Running, so kwok no longer writes them: no other change to
	// them can legitimately queue keys (pods elsewhere in the shared
	// cluster could, but only if they carry the annotation or the label).
	before := ctlQueueAdds(t, p, controller.PodNameLabelName)
	othersRV := map[string]string{}
	for _, o := range others {
		cur, err := env.client.CoreV1().Pods(ns).Get(context.Background(), o.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		othersRV[o.Name] = cur.ResourceVersion
	}
	ctlAnnotate(t, ns, bystander.Name, controller.AddPodNameLabelAnnotation, "true")
	ctlLabelled(t, ns, bystander.Name, true)
	ctlAnnotate(t, ns, bystander.Name, controller.AddPodNameLabelAnnotation, "false")
	ctlLabelled(t, ns, bystander.Name, false)
	ctlAnnotate(t, ns, x.Name, controller.AddPodNameLabelAnnotation, "true")
	ctlLabelled(t, ns, x.Name, true)
	if after := ctlQueueAdds(t, p, controller.PodNameLabelName); after-before != 3 {
		t.Errorf("workqueue_adds_total{name=%q} grew by %d over three changes, want 3: the controller reacts to its own writes",
			controller.PodNameLabelName, after-before)
	}

	// The pods nobody touched kept their label, and were not written at all
	// while the controller handled the other pods' changes.
	for _, o := range others {
		cur, err := env.client.CoreV1().Pods(ns).Get(context.Background(), o.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur.Labels[controller.PodNameLabel] != o.Name {
			t.Errorf("pod %s lost its label: %v", o.Name, cur.Labels)
		}
		if cur.ResourceVersion != othersRV[o.Name] {
			t.Errorf("pod %s was written (resourceVersion %s -> %s) though nothing about it changed",
				o.Name, othersRV[o.Name], cur.ResourceVersion)
		}
	}
	if !strings.Contains(p.stderr.String(), "pod name label removed") {
		t.Errorf("no log line for the removed label:\n%s", p.stderr.String())
	}
}

// TestControllerPodNameLabelUserValue: without the annotation only the value
// the controller writes (the pod's name) is removed. A Deployment whose pods
// carry their own padok.fr/pod-name value and select on it keeps its pods as
// they are: relabelling them would orphan them and make the ReplicaSet
// replace them.
//
// "Unchanged" alone would also pass with a controller that never looked, so
// a sibling pod created afterwards, without the annotation and labelled with
// its own name, must lose its label: the informer hands pod events to the
// controller in resourceVersion order, so once the sibling is done the
// Deployment's pods were judged too. The queue metric then shows that only
// the sibling was queued.
func TestControllerPodNameLabelUserValue(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	p := start(t, ctlArgs(controller.PodNameLabelName)...)
	p.ready(t)
	before := ctlQueueAdds(t, p, controller.PodNameLabelName)

	const replicas = 2
	labels := map[string]string{"app": "user", controller.PodNameLabel: "frontend"}
	_, err := env.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: ctlPodSpec("")},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	// Running: kwok wrote its last status, nothing else writes them now.
	pods := ctlWaitPods(t, ns, "app=user", replicas, "running", ctlRunning)
	rv := map[string]string{}
	for _, pod := range pods {
		rv[pod.Name] = pod.ResourceVersion
	}

	// Labelled once Running, so that kwok's status writes cannot queue it a
	// second time while it still carries the label.
	ctlBarePod(t, ns, "sibling", "", nil)
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{controller.PodNameLabel: "sibling"}}})
	if _, err := env.client.CoreV1().Pods(ns).Patch(ctx, "sibling", types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		t.Fatalf("label pod sibling: %v", err)
	}
	ctlLabelled(t, ns, "sibling", false)

	// With a value selected on, only the pods' own labels matter: the
	// ReplicaSet would have replaced a relabelled pod with a new name.
	after, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=user"})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Items) != replicas {
		t.Errorf("%d pods app=user, want %d: pods were relabelled and replaced", len(after.Items), replicas)
	}
	for _, pod := range after.Items {
		if v := pod.Labels[controller.PodNameLabel]; v != "frontend" {
			t.Errorf("pod %s: label %s=%q, want the user's value frontend", pod.Name, controller.PodNameLabel, v)
		}
		if old, ok := rv[pod.Name]; !ok {
			t.Errorf("pod %s is new: the Deployment's pods were replaced (had %v)", pod.Name, rv)
		} else if pod.ResourceVersion != old {
			t.Errorf("pod %s was written (resourceVersion %s -> %s)", pod.Name, old, pod.ResourceVersion)
		}
	}
	if n := ctlQueueAdds(t, p, controller.PodNameLabelName) - before; n != 1 {
		t.Errorf("workqueue_adds_total{name=%q} grew by %d, want 1 (the sibling only)", controller.PodNameLabelName, n)
	}
	if !strings.Contains(p.stderr.String(), "pod name label removed") {
		t.Errorf("no log line for the sibling's removed label:\n%s", p.stderr.String())
	}
}

// ctlEvent waits for an events.k8s.io Event about the named object in ns
// with the given type, reason and reporting controller.
func ctlEvent(t *testing.T, ns, regarding, typ, reason, reporter string) {
	t.Helper()
	what := fmt.Sprintf("a %s Event %s from %s about %s/%s", typ, reason, reporter, ns, regarding)
	eventually(t, what, func(ctx context.Context) (bool, error) {
		list, err := env.client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(list.Items, func(e eventsv1.Event) bool {
			return e.Regarding.Name == regarding && e.Type == typ && e.Reason == reason && e.ReportingController == reporter
		}), nil
	})
}

// ctlDeny installs a ValidatingAdmissionPolicy (and its binding, limited by
// match) that refuses with 403 Forbidden the requests on resource of the
// core or rbac group for which expression is false, and waits until the
// apiserver enforces it: until probe, a dry-run request, is forbidden.
func ctlDeny(t *testing.T, name, group, resource string, op admissionregistrationv1.OperationType, expression string,
	match *admissionregistrationv1.MatchResources, probe func(ctx context.Context) error,
) {
	t.Helper()
	ctx := context.Background()
	a := env.client.AdmissionregistrationV1()
	_, err := a.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{op},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{group}, APIVersions: []string{"v1"},
							Resources: []string{resource}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{
				Expression: expression,
				Message:    "refused by e2e policy " + name,
				Reason:     ptr.To(metav1.StatusReasonForbidden),
			}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ValidatingAdmissionPolicy: %v", err)
	}
	t.Cleanup(func() { _ = a.ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	_, err = a.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    match,
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ValidatingAdmissionPolicyBinding: %v", err)
	}
	t.Cleanup(func() {
		_ = a.ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	eventually(t, "ValidatingAdmissionPolicy "+name+" to be enforced", func(ctx context.Context) (bool, error) {
		err := probe(ctx)
		if apierrors.IsForbidden(err) {
			return true, nil
		}
		if err == nil {
			err = fmt.Errorf("dry-run request allowed")
		}
		return false, err
	})
}

// ctlDenyPodNameLabel refuses any update adding the pod-name label to a pod
// in ns, probing with a dry-run patch of pod.
func ctlDenyPodNameLabel(t *testing.T, ns, pod string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{controller.PodNameLabel: pod}}})
	ctlDeny(t, "hookback-e2e-deny-pod-name-label-"+ns, "", "pods", admissionregistrationv1.Update,
		fmt.Sprintf(`!has(object.metadata.labels) || !(%[1]q in object.metadata.labels) || `+
			`(has(oldObject.metadata.labels) && %[1]q in oldObject.metadata.labels)`, controller.PodNameLabel),
		&admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
		}},
		func(ctx context.Context) error {
			_, err := env.client.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, body,
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
}

// TestControllerPodNameLabelWarningEvents covers the controller's Events: a
// write the apiserver refuses (here an admission policy says no; RBAC would
// say it the same way, with a 403) and a pod whose name cannot be a label
// value. Either way nothing is written and a Warning Event on the pod says
// why.
func TestControllerPodNameLabelWarningEvents(t *testing.T) {
	ns := namespace(t)
	p := start(t, ctlArgs(controller.PodNameLabelName)...)
	refused := ctlBarePod(t, ns, "refused", "", nil)
	ctlDenyPodNameLabel(t, ns, refused.Name)
	p.ready(t)

	ctlAnnotate(t, ns, refused.Name, controller.AddPodNameLabelAnnotation, "true")
	ctlEvent(t, ns, refused.Name, corev1.EventTypeWarning, "LabelRefused", controller.PodNameLabelName)
	cur, err := env.client.CoreV1().Pods(ns).Get(context.Background(), refused.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, has := cur.Labels[controller.PodNameLabel]; has {
		t.Errorf("label %s=%s set despite the policy", controller.PodNameLabel, v)
	}

	// Pod names may have 253 characters, label values 63.
	long := "long-" + strings.Repeat("x", 70)
	ctlBarePod(t, ns, long, "", map[string]string{controller.AddPodNameLabelAnnotation: "true"})
	ctlEvent(t, ns, long, corev1.EventTypeWarning, "PodNameNotLabelable", controller.PodNameLabelName)
}
