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

	"github.com/hookback/hookback/builtin/controllers"
)

// Helpers of the controller tests (controllers_test.go,
// controllers_execrbac_test.go).

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
	what := "labelled " + controllers.PodNameLabel + "=" + name
	if !want {
		what = "without label " + controllers.PodNameLabel
	}
	eventually(t, "pod "+ns+"/"+name+" "+what, func(ctx context.Context) (bool, error) {
		var err error
		if pod, err = env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			return false, err
		}
		v, has := pod.Labels[controllers.PodNameLabel]
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
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{controllers.PodNameLabel: pod}}})
	ctlDeny(t, "hookback-e2e-deny-pod-name-label-"+ns, "", "pods", admissionregistrationv1.Update,
		fmt.Sprintf(`!has(object.metadata.labels) || !(%[1]q in object.metadata.labels) || `+
			`(has(oldObject.metadata.labels) && %[1]q in oldObject.metadata.labels)`, controllers.PodNameLabel),
		&admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
		}},
		func(ctx context.Context) error {
			_, err := env.client.CoreV1().Pods(ns).Patch(ctx, pod, types.MergePatchType, body,
				metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
			return err
		})
}
