package tunnel

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/registration"
)

// Clients are what the relay's lifecycle reads and writes the cluster with.
type Clients struct {
	Client  kubernetes.Interface
	Dynamic dynamic.Interface
}

// SessionOptions configure one hookback session's reverse tunnel.
type SessionOptions struct {
	Clients
	// Rest reaches the apiserver for the pod port-forward.
	Rest *rest.Config
	// Session names the relay and labels its objects, as cleanup selects them.
	Session string
	// Namespace holds the relay's objects; Image runs `hookback relay`.
	Namespace, Image string
	// Lease is the session Lease, NAMESPACE/NAME, recorded on every object
	// so that a later run can tell whether their session is alive.
	Lease string
	// AttachTimeout bounds the wait for the relay pod and the first attach;
	// zero: DefaultAttachTimeout.
	AttachTimeout time.Duration
	Log           *slog.Logger
}

// Session is one hookback session's reverse tunnel: the relay it deploys
// in the cluster, and the attachment that keeps this process connected to
// it. Deploy, Attach, then Remove; Redeploy after the cluster is regained.
type Session struct {
	spec Spec
	o    SessionOptions
	log  *slog.Logger
	// dialer reaches the relay's control port; nil: the apiserver's pod
	// port-forward (tests dial a relay on loopback).
	dialer Dialer
}

// NewSession is the tunnel of o.Session, with a fresh session secret
// (Deploy takes over the one a crashed run of the session left).
func NewSession(o SessionOptions) (*Session, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("tunnel secret: %w", err)
	}
	if o.AttachTimeout == 0 {
		o.AttachTimeout = DefaultAttachTimeout
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Session{
		spec: Spec{Name: RelayName(o.Session), Namespace: o.Namespace, Session: o.Session, Image: o.Image, Secret: hex.EncodeToString(b)},
		o:    o, log: log,
	}, nil
}

// Spec is the session's relay; it holds the session secret, so it is not
// for logging.
func (s *Session) Spec() Spec { return s.spec }

// Service is the clientConfig.service every configuration points at.
func (s *Session) Service() registration.ServiceRef {
	return registration.ServiceRef{Namespace: s.spec.Namespace, Name: s.spec.Name, Port: 443}
}

// Deploy writes the relay, reusing the secret of the relay a crashed run
// of this session left; call it once the session's Lease is ours.
func (s *Session) Deploy(ctx context.Context) error {
	s.adoptSecret(ctx)
	return s.Redeploy(ctx)
}

// adoptSecret takes over the session secret of a relay that a crashed run
// of this session left: its pod read the secret from the Secret when it
// started and refuses any other, so a fresh secret would keep the restarted
// session from attaching (kill -9, then start again) until the pod is
// replaced. The session's Lease is ours by now, so the relay is too.
func (s *Session) adoptSecret(ctx context.Context) {
	list, err := s.o.Client.CoreV1().Secrets(s.spec.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: sessionSelector(s.spec.Session),
		FieldSelector: fields.OneTermEqualSelector("metadata.name", s.spec.Name).String(),
	})
	if err != nil {
		s.log.Debug("no relay secret to reuse", "namespace", s.spec.Namespace, "error", err)
		return
	}
	for _, sec := range list.Items {
		if sec.Name == s.spec.Name && len(sec.Data[SecretKey]) > 0 { // the fake clientset ignores field selectors
			s.spec.Secret = string(sec.Data[SecretKey])
			s.log.Info("reusing the relay a previous run of this session left", "namespace", s.spec.Namespace, "name", s.spec.Name)
			return
		}
	}
}

// Redeploy writes the relay's namespace (when missing), Secret, Deployment
// and Service, all labelled with the session and recording its Lease.
// Applying what is there changes nothing, so the pod is not replaced: the
// session calls it again after it regains the cluster, since a stale
// cleanup by another run may have deleted the relay meanwhile.
func (s *Session) Redeploy(ctx context.Context) error {
	if err := s.ensureNamespace(ctx); err != nil {
		return err
	}
	objs := Manifests(s.spec)
	for _, o := range []runtime.Object{objs.Secret, objs.Deployment, objs.Service} {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: m}
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		unstructured.RemoveNestedField(u.Object, "status")
		u.SetAnnotations(map[string]string{registration.AnnotationLease: s.o.Lease})
		if _, err := s.o.Dynamic.Resource(gvrOf(u.GetKind())).Namespace(s.spec.Namespace).Apply(ctx, u.GetName(), u,
			metav1.ApplyOptions{FieldManager: registration.FieldManager, Force: true}); err != nil {
			return fmt.Errorf("deploy the relay: apply %s %s/%s: %w", u.GetKind(), s.spec.Namespace, u.GetName(), err)
		}
	}
	s.log.Info("relay deployed", "namespace", s.spec.Namespace, "name", s.spec.Name, "image", s.spec.Image)
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
func (s *Session) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.spec.Namespace, Labels: map[string]string{
		registration.LabelManagedBy: registration.ManagedByValue, labelTunnelNamespace: "true"}}}
	_, err := s.o.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	switch {
	case err == nil:
		s.log.Info("created the tunnel namespace", "namespace", s.spec.Namespace)
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil
	case apierrors.IsForbidden(err):
		// Without the right to create namespaces, it may still exist.
		if _, gerr := s.o.Client.CoreV1().Namespaces().Get(ctx, s.spec.Namespace, metav1.GetOptions{}); gerr == nil || !apierrors.IsNotFound(gerr) {
			return nil
		}
		return field.Advise("tunnel.Config.Namespace", "tunnel namespace %q does not exist and you may not create it: ask for it to be created, or pass {tunnel.Config.Namespace} with one where you may deploy", s.spec.Namespace)
	default:
		return fmt.Errorf("create the tunnel namespace %q: %w", s.spec.Namespace, err)
	}
}

// Remove deletes the relay's objects, and the namespace when a tunnel
// session created it and nothing else runs there any more.
func (s *Session) Remove(ctx context.Context) error {
	errs := []error{deleteRelays(ctx, s.o.Clients, s.spec.Namespace, s.spec.Session, s.log)}
	errs = append(errs, removeNamespace(ctx, s.o.Clients, s.spec.Namespace, s.log))
	return errors.Join(errs...)
}

// CleanupStale deletes the relays of the sessions opts selects, as Cleanup
// does, before this session deploys its own: its namespace is where relays
// are looked for when listing cluster-wide is forbidden, and it stays.
func (s *Session) CleanupStale(ctx context.Context, opts registration.CleanupOptions) ([]string, error) {
	return Cleanup(ctx, s.o.Clients, s.spec.Namespace, s.spec.Namespace, opts, s.log)
}

// sessionSelector selects what hookback wrote for session.
func sessionSelector(session string) string {
	return registration.ManagedSelector + "," + registration.LabelSession + "=" + session
}
