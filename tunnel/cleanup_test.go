package tunnel

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/registration"
)

func sessionLease(session string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: registration.LeaseName(session), Namespace: "default"},
		Spec:       coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To[int32](30)},
	}
}

// TestCleanup: the relays of the selected sessions go wherever each
// session put its relay, or in the fallback namespace when the user may
// not list cluster-wide; nothing else is touched, and a tunnel namespace
// emptied goes too, but for the caller's own.
func TestCleanup(t *testing.T) {
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
			c := fakeClients(objs...)
			if tc.noClusterAll {
				c.Client.(*fake.Clientset).PrependReactor("list", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
					if a.GetNamespace() == metav1.NamespaceAll {
						return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "", nil)
					}
					return false, nil, nil
				})
			}
			removed, err := Cleanup(ctx, c, "hookback-system", tc.keep, tc.opts, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(removed)
			if !slices.Equal(removed, tc.removed) {
				t.Fatalf("removed %v, want %v", removed, tc.removed)
			}
			for s, ns := range relayNS {
				for _, r := range relayResources[1:] { // the Deployment and the Secret
					_, err := c.Dynamic.Resource(r.gvr).Namespace(ns).Get(ctx, RelayName(s), metav1.GetOptions{})
					if gone := apierrors.IsNotFound(err); gone != slices.Contains(tc.removed, s) {
						t.Errorf("relay %s of %s: get err %v, want removed %v", r.kind, s, err, slices.Contains(tc.removed, s))
					}
				}
			}
			if _, err := c.Dynamic.Resource(relayResources[2].gvr).Namespace("hookback-system").Get(ctx, "theirs", metav1.GetOptions{}); err != nil {
				t.Errorf("a Secret hookback does not manage was touched: %v", err)
			}
			if _, err := c.Client.AppsV1().Deployments("hookback").Get(ctx, "hookback", metav1.GetOptions{}); err != nil {
				t.Errorf("the in-cluster install's Deployment was touched: %v", err)
			}
			for _, ns := range []string{"dev-bob", "hookback-system"} {
				_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
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
