package controller

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
)

const (
	// ExecAgentAnnotation enables the xxl-agent sidecar (see the
	// mutate-pod-sidecar webhook); its value is read with strconv.ParseBool.
	ExecAgentAnnotation = "xxl-agent/enable"
	// ExecRBACObjectName names both the ClusterRole and the ClusterRoleBinding.
	ExecRBACObjectName = "xxl-agent-exec"
)

// ExecRBACRules returns the ClusterRole's rules. pods/exec needs "create"
// (SPDY, and WebSocket since Kubernetes 1.35) and "get" (WebSocket on
// 1.30-1.34); `kubectl exec` also GETs the pod first to pick the container.
// hookback can only write this role if it holds these permissions itself or
// may "escalate" ClusterRoles, and bind it if it may "bind" it.
func ExecRBACRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
	}
}

// execRBAC keeps one ClusterRoleBinding listing the service account of every
// pod that enables the xxl-agent.
//
// Every event queues the same key, so there is a single writer for the
// binding: reconcile recomputes the whole subject set from the pod cache, and
// concurrent changes in several namespaces cannot overwrite each other's
// subjects. The binding's ServiceAccount subjects belong to this controller
// (one it did not derive from a pod is removed); User and Group subjects
// someone added by hand are kept as they are.
type execRBAC struct {
	client      kubernetes.Interface
	podInformer cache.SharedIndexInformer
	pods        corelisters.PodLister
	// rbacFactory is private and watches only the two objects named
	// ExecRBACObjectName, so an edit or a deletion of them is repaired at
	// once without caching every ClusterRole of the cluster.
	rbacFactory     informers.SharedInformerFactory
	roleInformer    cache.SharedIndexInformer
	roles           rbaclisters.ClusterRoleLister
	bindingInformer cache.SharedIndexInformer
	bindings        rbaclisters.ClusterRoleBindingLister
	labels          map[string]string
	recorder        events.EventRecorder
	log             *slog.Logger
	// notManagedLogged holds "kind/uid" of the objects found without the
	// managed-by labels and already logged, so the warning is logged once.
	notManagedLogged sync.Map
	loop             queueLoop[string]
}

func newExecRBAC(d Deps, metrics workqueue.MetricsProvider) *execRBAC {
	pods := d.Factory.Core().V1().Pods()
	rf := informers.NewSharedInformerFactoryWithOptions(d.Client, 0,
		informers.WithTransform(StripUnusedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ExecRBACObjectName).String()
		}))
	roles, bindings := rf.Rbac().V1().ClusterRoles(), rf.Rbac().V1().ClusterRoleBindings()
	c := &execRBAC{
		client:          d.Client,
		podInformer:     pods.Informer(),
		pods:            pods.Lister(),
		rbacFactory:     rf,
		roleInformer:    roles.Informer(),
		roles:           roles.Lister(),
		bindingInformer: bindings.Informer(),
		bindings:        bindings.Lister(),
		labels:          maps.Clone(d.ManagedByLabels),
		recorder:        recorderFor(d, ExecRBACName),
		log:             loggerFor(d, ExecRBACName),
	}
	c.loop = queueLoop[string]{name: ExecRBACName, log: c.log, metrics: metrics, reconcile: c.reconcile}
	return c
}

func (c *execRBAC) Name() string { return ExecRBACName }

// Run implements Controller.
func (c *execRBAC) Run(ctx context.Context, workers int) error {
	q := c.loop.newQueue()
	enqueue := func() { q.Add(ExecRBACObjectName) }
	var synced []cache.InformerSynced
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{c.podInformer, podExecHandler(enqueue)},
		{c.roleInformer, namedHandler(enqueue)},
		{c.bindingInformer, namedHandler(enqueue)},
	} {
		reg, err := h.informer.AddEventHandler(h.handler)
		if err != nil {
			q.ShutDown()
			return fmt.Errorf("%s: add event handler: %w", ExecRBACName, err)
		}
		defer func() { _ = h.informer.RemoveEventHandler(reg) }()
		synced = append(synced, reg.HasSynced)
	}
	c.rbacFactory.Start(ctx.Done())
	// Runs after loop.run returned, that is after ctx is done, so the
	// informers are stopping and Shutdown only waits for them.
	defer c.rbacFactory.Shutdown()
	// One reconcile even if no pod wants exec: subjects whose pods went away
	// while hookback was not running are dropped.
	enqueue()
	return c.loop.run(ctx, q, workers, synced...)
}

// execSubject returns the subject a pod needs in the binding, and false when
// it needs none. Pods that finished (Succeeded, Failed) cannot be exec'd
// into, so they do not keep their service account bound.
func execSubject(pod *corev1.Pod) (rbacv1.Subject, bool) {
	on, err := strconv.ParseBool(pod.Annotations[ExecAgentAnnotation])
	if err != nil || !on || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return rbacv1.Subject{}, false
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: pod.Namespace}, true
}

// podExecHandler queues a reconcile when a pod's need for a subject may have
// changed. Updates that leave it unchanged (status churn) are skipped.
func podExecHandler(enqueue func()) cache.ResourceEventHandler {
	subject := func(obj any) (rbacv1.Subject, bool) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return rbacv1.Subject{}, false
		}
		return execSubject(pod)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if _, ok := subject(obj); ok {
				enqueue()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			was, wasOK := subject(oldObj)
			is, isOK := subject(newObj)
			if was != is || wasOK != isOK {
				enqueue()
			}
		},
		DeleteFunc: func(obj any) {
			obj = tombstoneObject(obj)
			if _, isPod := obj.(*corev1.Pod); !isPod {
				enqueue() // unknown final state: recompute to be safe
				return
			}
			if _, ok := subject(obj); ok {
				enqueue()
			}
		},
	}
}

// namedHandler queues a reconcile on any change to the ClusterRole or the
// ClusterRoleBinding, including hookback's own writes: those reconciles find
// nothing to do. The name check matters where the field selector is not
// applied (the fake clientset ignores it).
func namedHandler(enqueue func()) cache.ResourceEventHandler {
	named := func(obj any) bool {
		o, ok := tombstoneObject(obj).(metav1.Object)
		return !ok || o.GetName() == ExecRBACObjectName
	}
	return cache.FilteringResourceEventHandler{
		FilterFunc: named,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { enqueue() },
			UpdateFunc: func(any, any) { enqueue() },
			DeleteFunc: func(any) { enqueue() },
		},
	}
}

func (c *execRBAC) reconcile(ctx context.Context, _ string) error {
	want, err := c.desiredSubjects()
	if err != nil {
		return err
	}
	if len(want) > 0 {
		ours, err := c.ensureRole(ctx)
		if err != nil {
			return c.writeFailed(c.desiredRole(), "UpdateClusterRole", err)
		}
		if !ours {
			// Binding service accounts to a role hookback does not control
			// could grant them anything: leave the pair alone.
			return nil
		}
	}
	if err := c.ensureBinding(ctx, want); err != nil {
		return c.writeFailed(c.desiredBinding(want), "UpdateClusterRoleBinding", err)
	}
	return nil
}

// desiredSubjects lists the service accounts of the pods that enable the
// agent, once each, sorted by namespace then name so that the binding is
// written the same way every time.
func (c *execRBAC) desiredSubjects() ([]rbacv1.Subject, error) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods from cache: %w", err)
	}
	set := map[rbacv1.Subject]struct{}{}
	for _, pod := range pods {
		if s, ok := execSubject(pod); ok {
			set[s] = struct{}{}
		}
	}
	return slices.SortedFunc(maps.Keys(set), compareSubjects), nil
}

func compareSubjects(a, b rbacv1.Subject) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.APIGroup, b.APIGroup))
}

// writeFailed turns a refused write into a Warning Event on the object
// hookback tried to write and stops there; other errors are returned for a
// retry with backoff.
func (c *execRBAC) writeFailed(obj runtime.Object, action string, err error) error {
	if !refused(err) {
		return err
	}
	c.log.Warn("write refused", "action", action, "err", err)
	c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "WriteRefused", action, "%v", err)
	return nil
}
