package session

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
	"github.com/hookback/hookback/webhook"
)

// relayObjects are one session's relay objects, as a tunnel session
// deploys them, recording its Lease.
func relayObjects(session, ns string) []runtime.Object {
	o := tunnel.Manifests(tunnel.Spec{Name: relayName(session), Namespace: ns, Session: session, Image: "img", Secret: "s"})
	out := []runtime.Object{o.Secret, o.Deployment, o.Service}
	for _, obj := range out {
		obj.(metav1.Object).SetAnnotations(map[string]string{registration.AnnotationLease: "default/" + registration.LeaseName(session)})
	}
	return out
}

func sessionLease(session string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: registration.LeaseName(session), Namespace: "default"},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To[int32](30)},
	}
}

// fakeCluster holds objs in a typed and a dynamic fake client alike.
func fakeCluster(objs ...runtime.Object) *Cluster {
	return &Cluster{Client: fake.NewClientset(objs...), Dynamic: dynamicfake.NewSimpleDynamicClient(scheme.Scheme, objs...)}
}

// TestCleanupRelays: the relays of the selected sessions go wherever each
// session put its relay, or in the fallback namespace when the user may
// not list cluster-wide; nothing else is touched, and a tunnel namespace
// emptied goes too, but for the caller's own.
func TestCleanupRelays(t *testing.T) {
	now := time.Now()
	// Where each session put its relay: the default namespace, or its own.
	relayNS := map[string]string{"alive": "hookback-system", "crashed": "hookback-system", "gone": "dev-bob", "mine": "hookback-system"}
	tests := []struct {
		name         string
		opts         registration.CleanupOptions
		keep         string
		noClusterAll bool // the user may list Deployments in a namespace only
		removed      []string
		nsGone       []string
	}{
		{name: "stale: an expired Lease and a missing one, never the caller's own or a live one",
			opts: registration.CleanupOptions{Stale: true, Except: "mine", DefaultLeaseNamespace: "default"}, keep: "hookback-system",
			removed: []string{"crashed", "gone"}, nsGone: []string{"dev-bob"}},
		{name: "stale, listing one namespace only",
			opts: registration.CleanupOptions{Stale: true, Except: "mine", DefaultLeaseNamespace: "default"}, keep: "hookback-system", noClusterAll: true,
			removed: []string{"crashed"}},
		{name: "named sessions go alive or not",
			opts: registration.CleanupOptions{Sessions: []string{"alive"}, DefaultLeaseNamespace: "default"}, removed: []string{"alive"}},
		{name: "the caller's own tunnel namespace stays, emptied or not",
			opts: registration.CleanupOptions{Stale: true, Except: "mine", DefaultLeaseNamespace: "default"}, keep: "dev-bob",
			removed: []string{"crashed", "gone"}},
		{name: "all, by hookback cleanup: an emptied tunnel namespace goes, one holding someone else's Secret stays",
			opts:    registration.CleanupOptions{All: true, DefaultLeaseNamespace: "default"},
			removed: []string{"alive", "crashed", "gone", "mine"}, nsGone: []string{"dev-bob"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var objs []runtime.Object
			for _, ns := range []string{"hookback-system", "dev-bob"} {
				objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
					Labels: map[string]string{registration.LabelManagedBy: registration.ManagedByValue, labelTunnelNamespace: "true"}}})
			}
			for s, ns := range relayNS {
				objs = append(objs, relayObjects(s, ns)...)
			}
			objs = append(objs, sessionLease("alive", now), sessionLease("mine", now), sessionLease("crashed", now.Add(-time.Hour)),
				// Someone else's Secret in the same namespace.
				&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "hookback-system"}},
				// An in-cluster install: hookback's labels, a session, no relay.
				inClusterDeployment())
			cl := fakeCluster(objs...)
			if tc.noClusterAll {
				cl.Client.(*fake.Clientset).PrependReactor("list", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetNamespace() == metav1.NamespaceAll {
						return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", nil)
					}
					return false, nil, nil
				})
			}
			removed, err := cleanupRelays(ctx, cl, "hookback-system", tc.keep, tc.opts, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(removed)
			if !slices.Equal(removed, tc.removed) {
				t.Fatalf("removed %v, want %v", removed, tc.removed)
			}
			for s, ns := range relayNS {
				for _, r := range relayResources[1:] { // the Deployment and the Secret
					_, err := cl.Dynamic.Resource(r.gvr).Namespace(ns).Get(ctx, relayName(s), metav1.GetOptions{})
					if gone := apierrors.IsNotFound(err); gone != slices.Contains(tc.removed, s) {
						t.Errorf("relay %s of %s: get err %v, want removed %v", r.kind, s, err, slices.Contains(tc.removed, s))
					}
				}
			}
			if _, err := cl.Dynamic.Resource(relayResources[2].gvr).Namespace("hookback-system").Get(ctx, "theirs", metav1.GetOptions{}); err != nil {
				t.Errorf("a Secret hookback does not manage was touched: %v", err)
			}
			if _, err := cl.Client.AppsV1().Deployments("hookback").Get(ctx, "hookback", metav1.GetOptions{}); err != nil {
				t.Errorf("the in-cluster install's Deployment was touched: %v", err)
			}
			for _, ns := range []string{"dev-bob", "hookback-system"} {
				_, err := cl.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				if gone := apierrors.IsNotFound(err); gone != slices.Contains(tc.nsGone, ns) {
					t.Errorf("namespace %s: get err %v, want gone %v", ns, err, slices.Contains(tc.nsGone, ns))
				}
			}
		})
	}
}

// inClusterDeployment looks like an in-cluster install's to a label
// selector: hookback's managed-by label and a session.
func inClusterDeployment() *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hookback", Namespace: "hookback",
		Labels: map[string]string{registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: "in-cluster",
			"app.kubernetes.io/name": "hookback"},
		Annotations: map[string]string{registration.AnnotationLease: "hookback/hookback-in-cluster"}}}
}

func TestTunnelNamespace(t *testing.T) {
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	for _, tc := range []struct {
		name     string
		existing []runtime.Object
		kept     bool
	}{
		{name: "created when missing, deleted by the last session"},
		{name: "kept while another session's relay runs there", existing: relayObjects("other", "tun"), kept: true},
		{name: "never one hookback did not create", existing: []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tun"}}}, kept: true},
		{name: "kept while someone else's Secret is there", existing: []runtime.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "tun"}}}, kept: true},
		{name: "kept while someone else's pod runs there", existing: []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-x", Namespace: "tun"}}}, kept: true},
		{name: "kept while someone else's Service is there", existing: []runtime.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "tun"}}}, kept: true},
		{name: "the session's own relay pod, still terminating, does not keep it", existing: []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "relay-x", Namespace: "tun",
			Labels: map[string]string{registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: "s"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fakeCluster(tc.existing...)
			tun := &reverseTunnel{spec: tunnel.Spec{Name: "r", Namespace: "tun", Session: "s"}, cluster: cl, log: log}
			if err := tun.ensureNamespace(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tun.remove(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := cl.Client.CoreV1().Namespaces().Get(ctx, "tun", metav1.GetOptions{})
			switch {
			case tc.kept && err != nil:
				t.Errorf("namespace deleted: %v, want it kept", err)
			case !tc.kept && !apierrors.IsNotFound(err):
				t.Errorf("namespace after the last session: %v, want not found", err)
			}
		})
	}
}

// TestAdoptSecret: a restart of a crashed session reuses the secret its
// relay pod was started with; nobody else's.
func TestAdoptSecret(t *testing.T) {
	const ns = "hookback-system"
	log := slog.New(slog.DiscardHandler)
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: relayName("bare"), Namespace: ns},
		Data: map[string][]byte{tunnel.SecretKey: []byte("not-hookbacks")}}
	for _, tc := range []struct {
		name, session, want string
		existing            []runtime.Object
	}{
		{name: "the crashed run's relay", session: "mine", existing: relayObjects("mine", ns), want: "s"},
		{name: "none left: the fresh secret", session: "mine", want: "fresh"},
		{name: "another session's relay is not ours", session: "mine", existing: relayObjects("other", ns), want: "fresh"},
		{name: "a Secret of that name without hookback's labels", session: "bare", existing: []runtime.Object{unlabelled}, want: "fresh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tun := &reverseTunnel{spec: tunnel.Spec{Name: relayName(tc.session), Namespace: ns, Session: tc.session, Secret: "fresh"},
				cluster: fakeCluster(tc.existing...), log: log}
			tun.adoptSecret(context.Background())
			if tun.spec.Secret != tc.want {
				t.Errorf("secret %q, want %q", tun.spec.Secret, tc.want)
			}
		})
	}
}

func TestTunnelConfig(t *testing.T) {
	base := Config{Session: "dev", Port: 8643, LeaseNamespace: "default", Certs: certs.Options{Mode: certs.ModeSelfSigned}, WebhookOptions: webhook.DefaultOptions(),
		Tunnel: TunnelConfig{Enabled: true, Namespace: "hookback-system", Image: "img"}}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{name: "valid", mutate: func(*Config) {}},
		{name: "an advertise address too", mutate: func(c *Config) { c.AdvertiseAddress = "10.0.0.1" }, want: "exclude each other"},
		{name: "acme", mutate: func(c *Config) { c.Certs.Mode = certs.ModeACME }, want: "cannot certify the relay's Service name"},
		{name: "bad namespace", mutate: func(c *Config) { c.Tunnel.Namespace = "Hookback_System" }, want: "--tunnel-namespace"},
		{name: "no image", mutate: func(c *Config) { c.Tunnel.Image = "" }, want: "--relay-image"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mutate(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("permissions: the relay's objects and the port-forward, in its namespace only", func(t *testing.T) {
		perms, err := Permissions(base)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range perms {
			if p.Part == "tunnel" {
				if p.Namespace != "hookback-system" {
					t.Errorf("%+v: want namespace hookback-system", p)
				}
				got = append(got, p.Verb+" "+p.Resource+"/"+p.Subresource)
			}
		}
		for _, want := range []string{"create deployments/", "delete services/", "create secrets/", "list pods/", "create pods/portforward", "get pods/portforward"} {
			if !slices.Contains(got, want) {
				t.Errorf("tunnel permissions %v lack %q", got, want)
			}
		}
	})
}

// TestPullFailure: start --tunnel gives up at once on a relay image the
// kubelet cannot pull, and keeps waiting for anything else.
func TestPullFailure(t *testing.T) {
	spec := tunnel.Spec{Name: "r", Namespace: "tun", Session: "s", Image: "registry.invalid/hookback:dev"}
	labels := tunnel.Manifests(spec).Deployment.Spec.Template.Labels
	pod := func(reason string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "r-1", Namespace: "tun", Labels: labels}}
		if reason != "" {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "relay", State: corev1.ContainerState{
				Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "pulling " + spec.Image}}}}
		}
		return p
	}
	for _, tc := range []struct {
		name, reason string
		fails        bool
	}{
		{name: "backing off a pull", reason: "ImagePullBackOff", fails: true},
		{name: "a malformed reference", reason: "InvalidImageName", fails: true},
		{name: "a first failed pull may still succeed", reason: "ErrImagePull"},
		{name: "creating the container", reason: "ContainerCreating"},
		{name: "no status yet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tun := &reverseTunnel{spec: spec, cluster: fakeCluster(pod(tc.reason)), log: slog.New(slog.DiscardHandler)}
			why := tun.pullFailure(context.Background())
			if got := why != ""; got != tc.fails {
				t.Fatalf("pullFailure = %q, want failing: %v", why, tc.fails)
			}
			if tc.fails && !strings.Contains(why, tc.reason) {
				t.Errorf("pullFailure = %q, want it to name %s", why, tc.reason)
			}
		})
	}
}

// TestRedeployRelay: when the session regains the cluster, a relay that a
// stale cleanup deleted meanwhile is written again; a tunnel re-attach
// alone writes nothing.
func TestRedeployRelay(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		why     string
		applied []string
	}{
		{why: "lease recreated", applied: []string{"secrets", "deployments", "services"}},
		{why: whyTunnelReattached},
	} {
		t.Run(tc.why, func(t *testing.T) {
			cl := fakeCluster()
			// The fake dynamic client cannot apply: record the applies.
			var applied []string
			cl.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if p, ok := a.(k8stesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType && p.GetNamespace() == "tun" {
					applied = append(applied, a.GetResource().Resource)
				}
				return true, &unstructured.Unstructured{}, nil
			})
			tun := &reverseTunnel{spec: tunnel.Spec{Name: relayName("s"), Namespace: "tun", Session: "s", Image: "img", Secret: "k"},
				cluster: cl, log: slog.New(slog.DiscardHandler)}
			r := &run{tunnel: tun, leaseRef: "default/hookback-s", cfg: Config{Log: slog.New(slog.DiscardHandler)}}
			r.redeployRelay(ctx, tc.why)
			if !slices.Equal(applied, tc.applied) {
				t.Errorf("applied %v, want %v", applied, tc.applied)
			}
			_, err := cl.Client.CoreV1().Namespaces().Get(ctx, "tun", metav1.GetOptions{})
			if got, want := err == nil, tc.applied != nil; got != want {
				t.Errorf("tunnel namespace written: %v, want %v", got, want)
			}
		})
	}
}
