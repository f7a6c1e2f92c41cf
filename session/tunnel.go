package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// TunnelConfig is `start --tunnel`: the apiserver reaches hookback through
// a relay the session deploys, and hookback reaches the relay through the
// apiserver's pod port-forward, so nothing but the kubeconfig is needed.
type TunnelConfig struct {
	Enabled bool
	// Namespace holds the relay's Secret, Deployment and Service.
	Namespace string
	// Image runs `hookback relay`.
	Image string
	// AttachTimeout bounds the wait for the relay pod and the first attach.
	AttachTimeout time.Duration
}

// Validate reports every problem of an enabled tunnel at once, given the
// session's --advertise-address and TLS mode, which it rules out.
func (t TunnelConfig) Validate(advertiseAddress, tlsMode string) error {
	if !t.Enabled {
		return nil
	}
	var errs []error
	for _, msg := range validation.IsDNS1123Label(t.Namespace) {
		errs = append(errs, fmt.Errorf("--tunnel-namespace %q: %s", t.Namespace, msg))
	}
	if t.Image == "" {
		errs = append(errs, errors.New("--tunnel needs --relay-image: this build has no released image"))
	}
	if advertiseAddress != "" {
		errs = append(errs, errors.New("--advertise-address and --tunnel exclude each other: with --tunnel the apiserver dials the relay's Service"))
	}
	if tlsMode == certs.ModeACME {
		errs = append(errs, errors.New("--tls-mode acme cannot certify the relay's Service name (NAME.NAMESPACE.svc): use self-signed or files with --tunnel"))
	}
	return errors.Join(errs...)
}

// DefaultTunnelNamespace is --tunnel-namespace's default.
const DefaultTunnelNamespace = "hookback-system"

// labelTunnelNamespace marks a namespace a tunnel session created, so the
// last tunnel session to leave it may delete it again.
const labelTunnelNamespace = "hookback.dev/tunnel-namespace"

var relayResources = []struct {
	gvr  schema.GroupVersionResource
	kind string
}{
	{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service"},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment"},
	{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret"},
}

// tunnelPermissions are what a tunnel session needs in its namespace.
func tunnelPermissions(ns string) []admission.Permission {
	var ps []admission.Permission
	add := func(group, resource, sub, why string, verbs ...string) {
		for _, v := range verbs {
			ps = append(ps, admission.Permission{Verb: v, Group: group, Resource: resource, Subresource: sub,
				Namespace: ns, Why: why, Part: "tunnel"})
		}
	}
	for _, r := range relayResources {
		add(r.gvr.Group, r.gvr.Resource, "", "deploy the session's relay", "create", "patch", "list", "delete")
	}
	add("", "pods", "", "find the relay pod", "list")
	// A WebSocket port-forward is a GET the apiserver also authorizes as create.
	add("", "pods", "portforward", "attach to the relay", "get", "create")
	return ps
}

// relayName is the name of the session's relay objects.
func relayName(session string) string { return "hookback-relay-" + session }

// tunnel is the session's relay in the cluster and the attacher that keeps
// this process connected to it.
type reverseTunnel struct {
	spec    tunnel.Spec
	cluster *Cluster
	log     *slog.Logger
}

func newTunnel(cfg Config, cl *Cluster) (*reverseTunnel, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("tunnel secret: %w", err)
	}
	return &reverseTunnel{
		spec: tunnel.Spec{Name: relayName(cfg.Session), Namespace: cfg.Tunnel.Namespace, Session: cfg.Session,
			Image: cfg.Tunnel.Image, Secret: hex.EncodeToString(b)},
		cluster: cl, log: cfg.Log,
	}, nil
}

// service is the clientConfig.service every configuration points at.
func (t *reverseTunnel) service() registration.ServiceRef {
	return registration.ServiceRef{Namespace: t.spec.Namespace, Name: t.spec.Name, Port: 443}
}

// adoptSecret takes over the session secret of a relay that a crashed run
// of this session left: its pod read the secret from the Secret when it
// started and refuses any other, so a fresh secret would keep the restarted
// session from attaching (kill -9, then start again) until the pod is
// replaced. The session's Lease is ours by now, so the relay is too.
func (t *reverseTunnel) adoptSecret(ctx context.Context) {
	list, err := t.cluster.Client.CoreV1().Secrets(t.spec.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: registration.ManagedSelector + "," + registration.LabelSession + "=" + t.spec.Session,
		FieldSelector: fields.OneTermEqualSelector("metadata.name", t.spec.Name).String(),
	})
	if err != nil {
		t.log.Debug("no relay secret to reuse", "namespace", t.spec.Namespace, "error", err)
		return
	}
	for _, s := range list.Items {
		if s.Name == t.spec.Name && len(s.Data[tunnel.SecretKey]) > 0 { // the fake clientset ignores field selectors
			t.spec.Secret = string(s.Data[tunnel.SecretKey])
			t.log.Info("reusing the relay a previous run of this session left", "namespace", t.spec.Namespace, "name", t.spec.Name)
			return
		}
	}
}

// deploy writes the relay's namespace (when missing), Secret, Deployment
// and Service, all labelled with the session; leaseRef is recorded on them
// so a later run can tell whether their session is alive.
func (t *reverseTunnel) deploy(ctx context.Context, leaseRef string) error {
	if err := t.ensureNamespace(ctx); err != nil {
		return err
	}
	objs := tunnel.Manifests(t.spec)
	for _, o := range []runtime.Object{objs.Secret, objs.Deployment, objs.Service} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		u.SetAnnotations(map[string]string{registration.AnnotationLease: leaseRef})
		gvr := gvrOf(u.GetKind())
		if _, err := t.cluster.Dynamic.Resource(gvr).Namespace(t.spec.Namespace).Apply(ctx, u.GetName(), u,
			metav1.ApplyOptions{FieldManager: registration.FieldManager, Force: true}); err != nil {
			return fmt.Errorf("deploy the relay: apply %s %s/%s: %w", u.GetKind(), t.spec.Namespace, u.GetName(), err)
		}
	}
	t.log.Info("relay deployed", "namespace", t.spec.Namespace, "name", t.spec.Name, "image", t.spec.Image)
	return nil
}

func gvrOf(kind string) schema.GroupVersionResource {
	for _, r := range relayResources {
		if r.kind == kind {
			return r.gvr
		}
	}
	return schema.GroupVersionResource{}
}

// ensureNamespace creates the tunnel namespace when it is missing, marked
// so that the last tunnel session leaving it deletes it.
func (t *reverseTunnel) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.spec.Namespace, Labels: map[string]string{
		registration.LabelManagedBy: registration.ManagedByValue, labelTunnelNamespace: "true"}}}
	_, err := t.cluster.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	switch {
	case err == nil:
		t.log.Info("created the tunnel namespace", "namespace", t.spec.Namespace)
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err):
		// Without the right to create namespaces, it may still exist.
		if _, gerr := t.cluster.Client.CoreV1().Namespaces().Get(ctx, t.spec.Namespace, metav1.GetOptions{}); gerr == nil || !apierrors.IsNotFound(gerr) {
			return nil
		}
		return fmt.Errorf("tunnel namespace %q does not exist and you may not create it: ask for it to be created, or pass --tunnel-namespace with one where you may deploy", t.spec.Namespace)
	default:
		return fmt.Errorf("create the tunnel namespace %q: %w", t.spec.Namespace, err)
	}
}

// podName is the relay's ready pod, for each port-forward: after a
// restart of the pod it is another one.
func (t *reverseTunnel) podName(ctx context.Context) (string, error) {
	pods, err := t.cluster.Client.CoreV1().Pods(t.spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: t.spec.Selector()})
	if err != nil {
		return "", fmt.Errorf("find the relay pod: %w", err)
	}
	var why string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
			return p.Name, nil
		}
		why = podState(&p)
	}
	if why == "" {
		why = "no pod yet"
	}
	return "", fmt.Errorf("relay pod %s/%s not ready: %s", t.spec.Namespace, t.spec.Selector(), why)
}

// pullFailure is why the relay's image cannot be pulled, when the kubelet
// has given up for now (ImagePullBackOff) or never can (a malformed or
// never-pull reference): waiting longer would not help, the image would.
func (t *reverseTunnel) pullFailure(ctx context.Context) string {
	pods, err := t.cluster.Client.CoreV1().Pods(t.spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: t.spec.Selector()})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
					return podState(&p)
				}
			}
		}
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState says why a pod is not ready, in the words kubectl would show.
func podState(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s %s: %s", p.Name, w.Reason, w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return fmt.Sprintf("%s %s: %s", p.Name, c.Reason, c.Message)
		}
	}
	return fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
}

// attacher builds the attacher that hands each tunnelled connection to
// local, re-attaching with backoff; onUp runs on every attach.
func (t *reverseTunnel) attacher(local string, metrics prometheus.Registerer, onUp func()) (*tunnel.Attacher, error) {
	rc := rest.CopyConfig(t.cluster.Config.Rest)
	rc.Timeout = 0 // a port-forward lives as long as the tunnel
	return tunnel.NewAttacher(tunnel.AttachOptions{
		Dialer: &tunnel.PortForward{Config: rc, Client: t.cluster.Client, Namespace: t.spec.Namespace,
			Pod: t.podName, Port: tunnel.DefaultControlPort},
		Secret: t.spec.Secret, Local: local, Log: t.log, OnUp: onUp, Metrics: metrics,
	})
}

// remove deletes the relay's objects, and the namespace when a tunnel
// session created it and nothing else runs there any more.
func (t *reverseTunnel) remove(ctx context.Context) error {
	errs := []error{deleteRelays(ctx, t.cluster, t.spec.Namespace, t.spec.Session, t.log)}
	errs = append(errs, removeTunnelNamespace(ctx, t.cluster, t.spec.Namespace, t.log))
	return errors.Join(errs...)
}

// deleteRelays deletes the relay objects of session in namespace.
func deleteRelays(ctx context.Context, cl *Cluster, namespace, session string, log *slog.Logger) error {
	sel := registration.ManagedSelector + "," + registration.LabelSession + "=" + session
	var errs []error
	for _, r := range relayResources {
		list, err := cl.Dynamic.Resource(r.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			errs = append(errs, fmt.Errorf("list the relay's %ss: %w", r.kind, err))
			continue
		}
		for _, o := range list.Items {
			err := cl.Dynamic.Resource(r.gvr).Namespace(namespace).Delete(ctx, o.GetName(),
				metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete the relay's %s %s/%s: %w", r.kind, namespace, o.GetName(), err))
				continue
			}
			log.Info("deleted the relay's "+r.kind, "namespace", namespace, "name", o.GetName(), "session", session)
		}
	}
	return errors.Join(errs...)
}

// removeTunnelNamespace deletes namespace when a tunnel session created it
// and nothing but what hookback wrote is left in it: no Deployment (another
// session's relay), and no Pod, Service or Secret without hookback's
// managed-by label (someone else's work, put in a namespace they may not
// know hookback made).
func removeTunnelNamespace(ctx context.Context, cl *Cluster, namespace string, log *slog.Logger) error {
	ns, err := cl.Client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if err != nil || ns.Labels[labelTunnelNamespace] != "true" {
		return nil // not ours to delete, or not readable: leave it
	}
	if what := occupant(ctx, cl, namespace); what != "" {
		log.Info("left the tunnel namespace: it is not empty", "namespace", namespace, "holds", what)
		return nil
	}
	if err := cl.Client.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		if apierrors.IsForbidden(err) {
			return nil // created by someone who could; they may delete it
		}
		return fmt.Errorf("delete the tunnel namespace %q: %w", namespace, err)
	}
	log.Info("deleted the tunnel namespace", "namespace", namespace)
	return nil
}

// occupant names something in namespace that keeps it from being deleted:
// any Deployment (another session's relay is hookback's too), or a Pod,
// Service or Secret without hookback's managed-by label. It lists only what
// a tunnel session may list there anyway.
func occupant(ctx context.Context, cl *Cluster, namespace string) string {
	deployments := []schema.GroupVersionResource{{Group: "apps", Version: "v1", Resource: "deployments"}}
	if what := Occupant(ctx, cl.Dynamic, namespace, deployments, func(*unstructured.Unstructured) bool { return false }); what != "" {
		return what
	}
	return Occupant(ctx, cl.Dynamic, namespace, []schema.GroupVersionResource{
		{Version: "v1", Resource: "pods"}, {Version: "v1", Resource: "services"}, {Version: "v1", Resource: "secrets"},
	}, func(o *unstructured.Unstructured) bool {
		return o.GetLabels()[registration.LabelManagedBy] == registration.ManagedByValue
	})
}
