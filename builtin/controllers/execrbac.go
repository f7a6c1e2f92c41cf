package controllers

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

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
	// ExecRBACObjectName names the ClusterRole, the RoleBinding in each
	// namespace that has such pods, and the ClusterRoleBinding older versions
	// of hookback made (deleted when found).
	ExecRBACObjectName = "xxl-agent-exec"
)

// roleKey is the queue key of the ClusterRole; every other key is the name of
// a namespace, whose RoleBinding it stands for (a namespace name is never
// empty).
const roleKey = ""

// ExecRBACRules returns the ClusterRole's rules. pods/exec needs "create"
// (SPDY, and WebSocket since Kubernetes 1.35) and "get" (WebSocket on
// 1.30-1.34); `kubectl exec` also GETs the pod first to pick the container.
// hookback can only write this role if it holds these permissions itself or
// may "escalate" ClusterRoles, and bind it in a namespace if it holds them
// there or may "bind" it.
func ExecRBACRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/exec"}, Verbs: []string{"create", "get"}},
	}
}

// execRBAC lets the service account of every pod that enables the xxl-agent
// exec into the pods of its own namespace, and no further: one ClusterRole
// defines the permission, and a RoleBinding in each namespace that has such
// pods binds it to their service accounts. A ClusterRoleBinding would let any
// of them exec into every pod of the cluster, kube-system included.
//
// The queue is keyed by namespace, so each RoleBinding has a single writer:
// its reconcile recomputes the namespace's whole subject set from the pod
// cache, and concurrent changes to several pods of a namespace cannot
// overwrite each other's subjects. The binding's ServiceAccount subjects
// belong to this controller (one it did not derive from a pod is removed);
// User and Group subjects someone added by hand are kept as they are. The
// ClusterRole's content is constant, so any key may (re)create it; its own
// key, roleKey, repairs it when it changes and then revisits the namespaces.
type execRBAC struct {
	client      kubernetes.Interface
	podInformer cache.SharedIndexInformer
	pods        corelisters.PodLister
	// rbacFactory is private and watches only the objects named
	// ExecRBACObjectName (the ClusterRole, and RoleBindings in every
	// namespace), so an edit or a deletion of them is repaired at once
	// without caching every role and binding of the cluster.
	rbacFactory     informers.SharedInformerFactory
	roleInformer    cache.SharedIndexInformer
	roles           rbaclisters.ClusterRoleLister
	bindingInformer cache.SharedIndexInformer
	bindings        rbaclisters.RoleBindingLister
	labels          map[string]string
	recorder        events.EventRecorder
	log             *slog.Logger
	// enqueue adds a key to the running queue; set by Run.
	enqueue func(key string)
	// legacyGone is set once no ClusterRoleBinding of an older hookback is
	// left to delete (or one is found that is not hookback's).
	legacyGone atomic.Bool
	// notManagedLogged holds "kind/uid" of the objects found without the
	// managed-by labels and already logged, so the warning is logged once.
	notManagedLogged sync.Map
	loop             queueLoop[string]
	// ran is set by the first Run; runs never overlap.
	ran bool
}

func newExecRBAC(d Deps, metrics workqueue.MetricsProvider) *execRBAC {
	pods := d.Factory.Core().V1().Pods()
	c := &execRBAC{
		client:      d.Client,
		podInformer: pods.Informer(),
		pods:        pods.Lister(),
		labels:      maps.Clone(d.ManagedByLabels),
		recorder:    recorderFor(d, ExecRBACName),
		log:         loggerFor(d, ExecRBACName),
		enqueue:     func(string) {},
	}
	c.watchRBAC()
	c.loop = queueLoop[string]{name: ExecRBACName, log: c.log, metrics: metrics, reconcile: c.reconcile}
	return c
}

// watchRBAC makes the private factory and its informers. A factory, once
// shut down, can neither start nor take handlers again, and Run shuts it
// down when it returns, so each later Run (an in-cluster replica leading
// again) needs a new one.
func (c *execRBAC) watchRBAC() {
	rf := informers.NewSharedInformerFactoryWithOptions(c.client, 0,
		informers.WithTransform(StripUnusedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", ExecRBACObjectName).String()
		}))
	roles, bindings := rf.Rbac().V1().ClusterRoles(), rf.Rbac().V1().RoleBindings()
	c.rbacFactory = rf
	c.roleInformer, c.roles = roles.Informer(), roles.Lister()
	c.bindingInformer, c.bindings = bindings.Informer(), bindings.Lister()
}

func (c *execRBAC) Name() string { return ExecRBACName }

// Run implements Controller. It may run again after it returned (an
// in-cluster replica that lost the Lease and leads again).
func (c *execRBAC) Run(ctx context.Context, workers int) error {
	if c.ran {
		c.watchRBAC()
	}
	c.ran = true
	q := c.loop.newQueue()
	c.enqueue = q.Add
	var synced []cache.InformerSynced
	for _, h := range []struct {
		informer cache.SharedIndexInformer
		handler  cache.ResourceEventHandler
	}{
		{c.podInformer, podExecHandler(q.Add)},
		{c.roleInformer, namedHandler(func(string) { q.Add(roleKey) })},
		{c.bindingInformer, namedHandler(q.Add)},
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
	// The informers' initial lists queue every namespace with such pods or
	// with a RoleBinding (so bindings left while hookback was not running are
	// pruned); the role key also deletes an older version's
	// ClusterRoleBinding.
	q.Add(roleKey)
	return c.loop.run(ctx, q, workers, synced...)
}

// execSubject returns the subject a pod needs in its namespace's binding, and
// false when it needs none. Pods that finished (Succeeded, Failed) cannot be
// exec'd into, so they do not keep their service account bound.
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

// podExecHandler queues a pod's namespace when the pod's need for a subject
// may have changed. Updates that leave it unchanged (status churn) are
// skipped.
func podExecHandler(enqueue func(namespace string)) cache.ResourceEventHandler {
	subject := func(obj any) (rbacv1.Subject, bool) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return rbacv1.Subject{}, false
		}
		return execSubject(pod)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if s, ok := subject(obj); ok {
				enqueue(s.Namespace)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			was, wasOK := subject(oldObj)
			is, isOK := subject(newObj)
			if was != is || wasOK != isOK {
				enqueue(objectNamespace(newObj))
			}
		},
		DeleteFunc: func(obj any) {
			pod, isPod := tombstoneObject(obj).(*corev1.Pod)
			if !isPod {
				// Unknown final state: recompute its namespace to be safe.
				if ns := objectNamespace(obj); ns != "" {
					enqueue(ns)
				}
				return
			}
			if _, ok := execSubject(pod); ok {
				enqueue(pod.Namespace)
			}
		},
	}
}

// objectNamespace returns the namespace of an informer notification's
// object, including a tombstone whose object is not readable.
func objectNamespace(obj any) string {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		if o, ok := tomb.Obj.(metav1.Object); ok {
			return o.GetNamespace()
		}
		ns, _, _ := cache.SplitMetaNamespaceKey(tomb.Key)
		return ns
	}
	if o, ok := obj.(metav1.Object); ok {
		return o.GetNamespace()
	}
	return ""
}

// namedHandler queues the namespace of any change to an object named
// ExecRBACObjectName (empty for the ClusterRole), including hookback's own
// writes: those reconciles find nothing to do. The name check matters where
// the field selector is not applied (the fake clientset ignores it).
func namedHandler(enqueue func(namespace string)) cache.ResourceEventHandler {
	named := func(obj any) bool {
		o, ok := tombstoneObject(obj).(metav1.Object)
		return !ok || o.GetName() == ExecRBACObjectName
	}
	add := func(obj any) { enqueue(objectNamespace(obj)) }
	return cache.FilteringResourceEventHandler{
		FilterFunc: named,
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    add,
			UpdateFunc: func(_, obj any) { add(obj) },
			DeleteFunc: add,
		},
	}
}

func (c *execRBAC) reconcile(ctx context.Context, key string) error {
	if key == roleKey {
		return c.reconcileRole(ctx)
	}
	return c.reconcileNamespace(ctx, key)
}

// reconcileNamespace makes the namespace's RoleBinding bind exactly the
// service accounts its pods need, and removes it when none is needed.
func (c *execRBAC) reconcileNamespace(ctx context.Context, ns string) error {
	want, err := c.desiredSubjects(ns)
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
			// could grant them anything: its own binding goes instead.
			want = nil
		}
	}
	if err := c.ensureBinding(ctx, ns, want); err != nil {
		return c.writeFailed(c.desiredBinding(ns, want), "UpdateRoleBinding", err)
	}
	return nil
}

// reconcileRole runs on a change to the ClusterRole (and once at start): it
// repairs or recreates the role while pods need it, then revisits every
// namespace with such pods or a binding, because whether the role is
// hookback's decides whether they may be bound. It also deletes the
// ClusterRoleBinding an older version left.
func (c *execRBAC) reconcileRole(ctx context.Context) error {
	if err := c.deleteLegacyBinding(ctx); err != nil {
		return err
	}
	namespaces, needed, err := c.namespacesToVisit()
	if err != nil {
		return err
	}
	if needed {
		if _, err := c.ensureRole(ctx); err != nil {
			return c.writeFailed(c.desiredRole(), "UpdateClusterRole", err)
		}
	}
	for _, ns := range namespaces {
		c.enqueue(ns)
	}
	return nil
}

// desiredSubjects lists the service accounts of the namespace's pods that
// enable the agent, once each, sorted by name so that the binding is written
// the same way every time.
func (c *execRBAC) desiredSubjects(ns string) ([]rbacv1.Subject, error) {
	pods, err := c.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list pods of %s from cache: %w", ns, err)
	}
	set := map[rbacv1.Subject]struct{}{}
	for _, pod := range pods {
		if s, ok := execSubject(pod); ok {
			set[s] = struct{}{}
		}
	}
	return slices.SortedFunc(maps.Keys(set), compareSubjects), nil
}

// namespacesToVisit returns, sorted, the namespaces that have pods enabling
// the agent or a RoleBinding named ExecRBACObjectName in the cache, and
// whether any pod needs the role.
func (c *execRBAC) namespacesToVisit() (namespaces []string, needed bool, err error) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return nil, false, fmt.Errorf("list pods from cache: %w", err)
	}
	set := map[string]struct{}{}
	for _, pod := range pods {
		if _, ok := execSubject(pod); ok {
			set[pod.Namespace], needed = struct{}{}, true
		}
	}
	bindings, err := c.bindings.List(labels.Everything())
	if err != nil {
		return nil, false, fmt.Errorf("list rolebindings from cache: %w", err)
	}
	for _, b := range bindings {
		if b.Name == ExecRBACObjectName {
			set[b.Namespace] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set)), needed, nil
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
	c.log.Warn("write refused", "action", action, "error", err)
	c.recorder.Eventf(obj, nil, corev1.EventTypeWarning, "WriteRefused", action, "%v", err)
	return nil
}
