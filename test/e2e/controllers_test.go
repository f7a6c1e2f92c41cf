package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/builtin/controllers"
)

// Tests of the built-in controllers (builtin/controllers/), each run alone in a
// hookback started with --webhooks none, against the real apiserver. The
// exec-rbac ones are in controllers_execrbac_test.go. None of these tests
// calls t.Parallel.

func TestControllerPodNameLabel(t *testing.T) {
	requireLocal(t, whyKwokRuns)
	ns := namespace(t)
	p := start(t, ctlArgs(controllers.PodNameLabelName)...)
	// A pod the controller has no business with: used below to prove that
	// the controller ignores its own writes.
	bystander := ctlBarePod(t, ns, "bystander", "", nil)
	p.ready(t)

	const replicas = 3
	ctlDeployment(t, ns, "web", replicas, "", map[string]string{controllers.AddPodNameLabelAnnotation: "true"})
	pods := ctlWaitPods(t, ns, "app=web", replicas, "running and labelled with their own name", func(p *corev1.Pod) bool {
		return ctlRunning(p) && p.Labels[controllers.PodNameLabel] == p.Name
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
	ctlAnnotate(t, ns, x.Name, controllers.AddPodNameLabelAnnotation, "false")
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
	before := ctlQueueAdds(t, p, controllers.PodNameLabelName)
	othersRV := map[string]string{}
	for _, o := range others {
		cur, err := env.client.CoreV1().Pods(ns).Get(context.Background(), o.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		othersRV[o.Name] = cur.ResourceVersion
	}
	ctlAnnotate(t, ns, bystander.Name, controllers.AddPodNameLabelAnnotation, "true")
	ctlLabelled(t, ns, bystander.Name, true)
	ctlAnnotate(t, ns, bystander.Name, controllers.AddPodNameLabelAnnotation, "false")
	ctlLabelled(t, ns, bystander.Name, false)
	ctlAnnotate(t, ns, x.Name, controllers.AddPodNameLabelAnnotation, "true")
	ctlLabelled(t, ns, x.Name, true)
	if after := ctlQueueAdds(t, p, controllers.PodNameLabelName); after-before != 3 {
		t.Errorf("workqueue_adds_total{name=%q} grew by %d over three changes, want 3: the controller reacts to its own writes",
			controllers.PodNameLabelName, after-before)
	}

	// The pods nobody touched kept their label, and were not written at all
	// while the controller handled the other pods' changes.
	for _, o := range others {
		cur, err := env.client.CoreV1().Pods(ns).Get(context.Background(), o.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cur.Labels[controllers.PodNameLabel] != o.Name {
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
	requireLocal(t, whyKwokRuns)
	ctx := context.Background()
	ns := namespace(t)
	p := start(t, ctlArgs(controllers.PodNameLabelName)...)
	p.ready(t)
	before := ctlQueueAdds(t, p, controllers.PodNameLabelName)

	const replicas = 2
	labels := map[string]string{"app": "user", controllers.PodNameLabel: "frontend"}
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
	body, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{controllers.PodNameLabel: "sibling"}}})
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
		if v := pod.Labels[controllers.PodNameLabel]; v != "frontend" {
			t.Errorf("pod %s: label %s=%q, want the user's value frontend", pod.Name, controllers.PodNameLabel, v)
		}
		if old, ok := rv[pod.Name]; !ok {
			t.Errorf("pod %s is new: the Deployment's pods were replaced (had %v)", pod.Name, rv)
		} else if pod.ResourceVersion != old {
			t.Errorf("pod %s was written (resourceVersion %s -> %s)", pod.Name, old, pod.ResourceVersion)
		}
	}
	if n := ctlQueueAdds(t, p, controllers.PodNameLabelName) - before; n != 1 {
		t.Errorf("workqueue_adds_total{name=%q} grew by %d, want 1 (the sibling only)", controllers.PodNameLabelName, n)
	}
	if !strings.Contains(p.stderr.String(), "pod name label removed") {
		t.Errorf("no log line for the sibling's removed label:\n%s", p.stderr.String())
	}
}

// TestControllerPodNameLabelWarningEvents covers the controller's Events: a
// write the apiserver refuses (here an admission policy says no; RBAC would
// say it the same way, with a 403) and a pod whose name cannot be a label
// value. Either way nothing is written and a Warning Event on the pod says
// why.
func TestControllerPodNameLabelWarningEvents(t *testing.T) {
	requireLocal(t, whyKwokRuns)
	ns := namespace(t)
	p := start(t, ctlArgs(controllers.PodNameLabelName)...)
	refused := ctlBarePod(t, ns, "refused", "", nil)
	ctlDenyPodNameLabel(t, ns, refused.Name)
	p.ready(t)

	ctlAnnotate(t, ns, refused.Name, controllers.AddPodNameLabelAnnotation, "true")
	ctlEvent(t, ns, refused.Name, corev1.EventTypeWarning, "LabelRefused", controllers.PodNameLabelName)
	cur, err := env.client.CoreV1().Pods(ns).Get(context.Background(), refused.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, has := cur.Labels[controllers.PodNameLabel]; has {
		t.Errorf("label %s=%s set despite the policy", controllers.PodNameLabel, v)
	}

	// Pod names may have 253 characters, label values 63.
	long := "long-" + strings.Repeat("x", 70)
	ctlBarePod(t, ns, long, "", map[string]string{controllers.AddPodNameLabelAnnotation: "true"})
	ctlEvent(t, ns, long, corev1.EventTypeWarning, "PodNameNotLabelable", controllers.PodNameLabelName)
	// Annotated later, on UPDATE: the same Event.
	later := "later-" + strings.Repeat("y", 70)
	ctlBarePod(t, ns, later, "", nil)
	ctlAnnotate(t, ns, later, controllers.AddPodNameLabelAnnotation, "true")
	ctlEvent(t, ns, later, corev1.EventTypeWarning, "PodNameNotLabelable", controllers.PodNameLabelName)
}
