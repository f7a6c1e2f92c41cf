package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// whArgs start hookback with only the named built-in webhooks of the
// shipped template, and no controllers.
func whArgs(webhooks string, extra ...string) []string {
	return append([]string{"--webhooks", webhooks, "--controllers", "none"}, extra...)
}

// whAppContainer is the one container of the test pods; kwok never pulls it.
func whAppContainer() corev1.Container {
	return corev1.Container{Name: "app", Image: "registry.example/app:e2e"}
}

// whCreatePod creates a bare pod with one container.
func whCreatePod(ctx context.Context, ns string, meta metav1.ObjectMeta) (*corev1.Pod, error) {
	meta.Namespace = ns
	return env.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: meta,
		Spec:       corev1.PodSpec{Containers: []corev1.Container{whAppContainer()}, TerminationGracePeriodSeconds: ptr.To[int64](0)},
	}, metav1.CreateOptions{})
}

// whRunningPod creates a bare pod called name and waits until it runs. By then
// an informer watching pods (hookback's cache) has long seen it: kwok takes
// several status updates to get there.
func whRunningPod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	if _, err := whCreatePod(context.Background(), ns, metav1.ObjectMeta{Name: name}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	var pod *corev1.Pod
	eventually(t, "pod "+ns+"/"+name+" to run", func(ctx context.Context) (bool, error) {
		var err error
		pod, err = env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return pod.Status.Phase == corev1.PodRunning, nil
	})
	return pod
}

// whPodGone waits until the pod no longer exists.
func whPodGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, "pod "+ns+"/"+name+" to be deleted", func(ctx context.Context) (bool, error) {
		_, err := env.client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// whDeployment creates a Deployment of replicas pods labelled app=name plus
// labels, annotated with annotations, and returns its pods once all exist.
// Admission happens when a pod is created, so the pods returned are what the
// webhooks made of them.
func whDeployment(t *testing.T, ns, name string, replicas int32, labels, annotations map[string]string) []corev1.Pod {
	t.Helper()
	ctx := context.Background()
	podLabels := map[string]string{"app": name}
	for k, v := range labels {
		podLabels[k] = v
	}
	_, err := env.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: annotations},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{whAppContainer()}, TerminationGracePeriodSeconds: ptr.To[int64](0)},
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment %s: %v", name, err)
	}
	var pods []corev1.Pod
	eventually(t, fmt.Sprintf("%d pods of deployment %s", replicas, name), func(ctx context.Context) (bool, error) {
		list, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
		if err != nil {
			return false, err
		}
		pods = list.Items
		return len(pods) == int(replicas), nil
	})
	return pods
}

// whControllerOf returns the name of the pod's controlling ReplicaSet.
func whControllerOf(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "ReplicaSet" {
		t.Fatalf("pod %s has no controlling ReplicaSet: %v", pod.Name, pod.OwnerReferences)
	}
	return owner.Name
}

// whEventQuery selects events.k8s.io/v1 Events in a namespace.
type whEventQuery struct {
	reason, typ, reportingController string
	regardingKind, regardingName     string
}

func (q whEventQuery) String() string {
	return fmt.Sprintf("%s Event %s by %s regarding %s %s", q.typ, q.reason, q.reportingController, q.regardingKind, q.regardingName)
}

func (q whEventQuery) matches(e *eventsv1.Event) bool {
	return e.Reason == q.reason && e.Type == q.typ && e.ReportingController == q.reportingController &&
		e.Regarding.Kind == q.regardingKind && e.Regarding.Name == q.regardingName
}

// whEvents lists the Events of ns that q selects.
func whEvents(ctx context.Context, ns string, q whEventQuery) ([]eventsv1.Event, error) {
	list, err := env.client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []eventsv1.Event
	for i := range list.Items {
		if q.matches(&list.Items[i]) {
			out = append(out, list.Items[i])
		}
	}
	return out, nil
}

// whWaitEvent waits for an Event q selects and returns it.
func whWaitEvent(t *testing.T, ns string, q whEventQuery) eventsv1.Event {
	t.Helper()
	var found []eventsv1.Event
	eventually(t, q.String()+" in "+ns, func(ctx context.Context) (bool, error) {
		var err error
		found, err = whEvents(ctx, ns, q)
		return len(found) > 0, err
	})
	return found[0]
}

// whWaitEventNotes waits until, among the Events q selects, one note
// contains each of notes: distinct problems must not be merged into one
// Event that shows only the first message.
func whWaitEventNotes(t *testing.T, ns string, q whEventQuery, notes ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s in %s with notes %q", q, ns, notes), func(ctx context.Context) (bool, error) {
		found, err := whEvents(ctx, ns, q)
		if err != nil {
			return false, err
		}
		for _, want := range notes {
			if !slices.ContainsFunc(found, func(e eventsv1.Event) bool { return strings.Contains(e.Note, want) }) {
				return false, nil
			}
		}
		return true, nil
	})
}

// whWhoAmI is the username the tests' client authenticates as.
func whWhoAmI(t *testing.T) string {
	t.Helper()
	r, err := env.client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return r.Status.UserInfo.Username
}

// whLogLine returns the first line of log that contains every one of parts.
func whLogLine(log string, parts ...string) (string, bool) {
	for _, line := range strings.Split(log, "\n") {
		all := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				all = false
				break
			}
		}
		if all {
			return line, true
		}
	}
	return "", false
}

// whWaitLogLine waits for a line of hookback's log containing every one of
// parts and returns it.
func (p *proc) whWaitLogLine(t *testing.T, parts ...string) string {
	t.Helper()
	var line string
	eventually(t, fmt.Sprintf("a hookback log line with %q", parts), func(context.Context) (bool, error) {
		var ok bool
		line, ok = whLogLine(p.stderr.String(), parts...)
		return ok, nil
	})
	return line
}

// whWaitLogCount waits until at least n lines of hookback's log contain
// every one of parts. Rows that expect an object left unchanged use it to
// prove the webhook was called at all: under failurePolicy Ignore a webhook
// that never answered leaves the object unchanged too.
func (p *proc) whWaitLogCount(t *testing.T, n int, parts ...string) {
	t.Helper()
	count := func() int {
		c := 0
		for _, line := range strings.Split(p.stderr.String(), "\n") {
			if _, ok := whLogLine(line, parts...); ok {
				c++
			}
		}
		return c
	}
	eventually(t, fmt.Sprintf("%d hookback log lines with %q", n, parts), func(context.Context) (bool, error) {
		return count() >= n, nil
	})
}

// whReadyHeartbeat is the lastHeartbeatTime of the node's Ready condition.
func whReadyHeartbeat(node *corev1.Node) time.Time {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.LastHeartbeatTime.Time
		}
	}
	return time.Time{}
}

// whCreatePodImage creates a bare pod whose one container "app" runs image.
func whCreatePodImage(ctx context.Context, ns, name, image string) (*corev1.Pod, error) {
	return env.client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}},
			TerminationGracePeriodSeconds: ptr.To[int64](0)},
	}, metav1.CreateOptions{})
}
