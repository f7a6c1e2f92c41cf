package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
)

// The pod-name-label contract: a pod annotated AddPodNameLabelAnnotation="true"
// carries its own name in PodNameLabel. Pods made by a ReplicaSet only get
// their name from the apiserver after admission, hence a controller.
const (
	AddPodNameLabelAnnotation = "padok.fr/add-pod-name-label"
	PodNameLabel              = "padok.fr/pod-name"
)

// podNameLabel keeps PodNameLabel in line with AddPodNameLabelAnnotation.
type podNameLabel struct {
	client   kubernetes.Interface
	informer cache.SharedIndexInformer
	pods     corelisters.PodLister
	recorder events.EventRecorder
	log      *slog.Logger
	loop     queueLoop[cache.ObjectName]
}

func newPodNameLabel(d Deps, metrics workqueue.MetricsProvider) *podNameLabel {
	pods := d.Factory.Core().V1().Pods()
	c := &podNameLabel{
		client:   d.Client,
		informer: pods.Informer(),
		pods:     pods.Lister(),
		recorder: recorderFor(d, PodNameLabelName),
		log:      loggerFor(d, PodNameLabelName),
	}
	c.loop = queueLoop[cache.ObjectName]{name: PodNameLabelName, log: c.log, metrics: metrics, reconcile: c.reconcile}
	return c
}

func (c *podNameLabel) Name() string { return PodNameLabelName }

// Run implements Controller.
func (c *podNameLabel) Run(ctx context.Context, workers int) error {
	q := c.loop.newQueue()
	reg, err := c.informer.AddEventHandler(c.handler(q))
	if err != nil {
		return fmt.Errorf("%s: watch pods: %w", PodNameLabelName, err)
	}
	defer func() { _ = c.informer.RemoveEventHandler(reg) }()
	return c.loop.run(ctx, q, workers, reg.HasSynced)
}

// handler queues only pods whose label is wrong. Besides keeping the queue
// short on big clusters, this is what stops the controller from reacting to
// its own patch: the update it causes already matches. Deletions need no
// work.
func (c *podNameLabel) handler(q workqueue.TypedRateLimitingInterface[cache.ObjectName]) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			// On add, pods whose name cannot be a label value are queued
			// too, so that reconcile reports them once with an Event.
			if pod, ok := obj.(*corev1.Pod); ok && (!podNameLabelMatches(pod) || wantsPodNameLabel(pod)) {
				q.Add(cache.MetaObjectToName(pod))
			}
		},
		UpdateFunc: func(oldObj, obj any) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			// An annotation added to a pod whose name cannot be a label
			// value is reported once, as on add.
			old, _ := oldObj.(*corev1.Pod)
			askedNow := wantsPodNameLabel(pod) && (old == nil || !wantsPodNameLabel(old)) && labelableName(pod) != ""
			if !podNameLabelMatches(pod) || askedNow {
				q.Add(cache.MetaObjectToName(pod))
			}
		},
	}
}

func wantsPodNameLabel(pod *corev1.Pod) bool {
	return pod.Annotations[AddPodNameLabelAnnotation] == "true"
}

// labelableName reports why the pod's name cannot be a label value (longer
// than 63 characters: pod names may be up to 253), or "" when it can.
func labelableName(pod *corev1.Pod) string {
	return strings.Join(validation.IsValidLabelValue(pod.Name), "; ")
}

// podNameLabelMatches reports whether the pod needs no write. A pod whose
// name cannot be a label value is left as it is. Without the annotation only
// the value this controller writes (the pod's name) is removed: any other
// value was set by someone else, and a Deployment may select its pods on it.
func podNameLabelMatches(pod *corev1.Pod) bool {
	value, has := pod.Labels[PodNameLabel]
	if !wantsPodNameLabel(pod) {
		return !has || value != pod.Name
	}
	return (has && value == pod.Name) || labelableName(pod) != ""
}

func (c *podNameLabel) reconcile(ctx context.Context, key cache.ObjectName) error {
	pod, err := c.pods.Pods(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get pod %s from cache: %w", key, err)
	}
	if wantsPodNameLabel(pod) {
		if why := labelableName(pod); why != "" {
			c.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "PodNameNotLabelable", "LabelPod",
				"cannot set label %s: the pod name is not a valid label value: %s", PodNameLabel, why)
			return nil
		}
	}
	if podNameLabelMatches(pod) {
		return nil
	}
	return c.patch(ctx, pod)
}

// patch sets or removes PodNameLabel. Setting is a JSON merge patch that
// names only that label: it carries no resourceVersion, so it never conflicts
// with other writers of the pod, and it leaves every other label alone.
func (c *podNameLabel) patch(ctx context.Context, pod *corev1.Pod) error {
	if !wantsPodNameLabel(pod) {
		return c.removeLabel(ctx, pod)
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"labels": map[string]string{PodNameLabel: pod.Name}},
	})
	if err != nil {
		return fmt.Errorf("encode label patch: %w", err)
	}
	_, err = c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, body,
		metav1.PatchOptions{FieldManager: fieldManager})
	return c.patched(pod, "set", err)
}

// removeLabel removes PodNameLabel with a JSON patch that first tests that
// the value is still the pod's name. The cache may be behind: a user may have
// just set their own value, and a merge patch would delete it. A failed test
// is answered 422 Invalid, like a refusal, so the pod is read again to tell
// the two apart: a value that changed meanwhile is no longer this
// controller's business, and the watch event of that change already
// re-queued the pod.
func (c *podNameLabel) removeLabel(ctx context.Context, pod *corev1.Pod) error {
	path := "/metadata/labels/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(PodNameLabel)
	body, err := json.Marshal([]map[string]string{
		{"op": "test", "path": path, "value": pod.Name},
		{"op": "remove", "path": path},
	})
	if err != nil {
		return fmt.Errorf("encode label patch: %w", err)
	}
	pods := c.client.CoreV1().Pods(pod.Namespace)
	_, err = pods.Patch(ctx, pod.Name, types.JSONPatchType, body, metav1.PatchOptions{FieldManager: fieldManager})
	if apierrors.IsInvalid(err) {
		cur, getErr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(getErr):
			return nil
		case getErr != nil:
			return fmt.Errorf("get pod %s/%s after a refused patch: %w", pod.Namespace, pod.Name, getErr)
		case cur.UID != pod.UID || cur.Labels[PodNameLabel] != pod.Name:
			c.log.Debug("pod name label changed before removal, leaving it", "pod", pod.Namespace+"/"+pod.Name)
			return nil
		}
	}
	return c.patched(pod, "removed", err)
}

// patched logs a successful write and sorts the errors of a failed one.
func (c *podNameLabel) patched(pod *corev1.Pod, action string, err error) error {
	switch {
	case err == nil:
		c.log.Info("pod name label "+action, "pod", pod.Namespace+"/"+pod.Name)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case refused(err):
		c.log.Warn("pod name label refused", "pod", pod.Namespace+"/"+pod.Name, "error", err)
		c.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "LabelRefused", "LabelPod",
			"cannot update label %s: %v", PodNameLabel, err)
		return nil
	default:
		return fmt.Errorf("patch pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
}
