package takeover

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/registration"
)

const leaseName = "8f1c2a.shop.io"

// TestLeaseGivenBack: the Lease released at the take-over is given back
// with the Deployment: its labels and annotations exactly as before, and
// released (no holder, 1s) so that the restored pods lead at their first
// try, whoever held it at exit (nobody, the stopped local manager); a
// re-deployed pod that leads already keeps it.
func TestLeaseGivenBack(t *testing.T) {
	at := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		// holder is who holds the Lease at exit; "-" leaves it as released.
		holder string
		// pod is a pod of the namespace at exit ("": none).
		pod          string
		wantHolder   string
		wantReleased bool
	}{
		{name: "nobody took it", holder: "-", wantHolder: "", wantReleased: true},
		{name: "the local manager stopped without releasing it", holder: "laptop_5e6f", wantHolder: "", wantReleased: true},
		{name: "the local manager released it on cancel", holder: "", wantHolder: "", wantReleased: true},
		{name: "a re-deployed pod leads already", holder: "shop-controller-manager-7d9f-zzzzz_9a8b", pod: "shop-controller-manager-7d9f-zzzzz",
			wantHolder: "shop-controller-manager-7d9f-zzzzz_9a8b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			c, logs := fixture(t, "operator.yaml")
			leases := c.Client.CoordinationV1().Leases(ns)
			before, _ := leases.Get(ctx, leaseName, metav1.GetOptions{})
			op := discover(t, c)
			tk := taker(c, logs, "dev-1")
			tk.Now = func() time.Time { return at }
			if err := tk.Take(ctx, op, redirects()); err != nil {
				t.Fatal(err)
			}
			if err := c.Client.CoreV1().Pods(ns).Delete(ctx, op.Pods[0], metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := tk.ReleaseLeases(ctx, op, time.Second, tk.now); err != nil {
				t.Fatal(err)
			}
			l, _ := leases.Get(ctx, leaseName, metav1.GetOptions{})
			if l.Labels[registration.LabelSession] != "dev-1" || !strings.Contains(l.Annotations[AnnotationState], `"holder":"shop-controller-manager-7d9f-abcde_`) {
				t.Errorf("released Lease not marked as the session's with its holder: %v %v", l.Labels, l.Annotations)
			}
			if tc.holder != "-" {
				l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = ptr.To(tc.holder), ptr.To[int32](15)
				if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			if tc.pod != "" {
				if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.pod, Namespace: ns}}, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			restored, err := tk.Restore(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(restored, " "), "Lease/"+ns+"/"+leaseName) {
				t.Errorf("restored %v: the Lease is not among them", restored)
			}
			after, _ := leases.Get(ctx, leaseName, metav1.GetOptions{})
			if !reflect.DeepEqual(after.Labels, before.Labels) || !reflect.DeepEqual(after.Annotations, before.Annotations) {
				t.Errorf("Lease metadata not given back: labels %v annotations %v, want %v %v", after.Labels, after.Annotations, before.Labels, before.Annotations)
			}
			if h := ptr.Deref(after.Spec.HolderIdentity, "-"); h != tc.wantHolder {
				t.Errorf("holder at exit %q, want %q", h, tc.wantHolder)
			}
			released := ptr.Deref(after.Spec.LeaseDurationSeconds, 0) == 1 && after.Spec.RenewTime != nil && after.Spec.RenewTime.Time.Equal(at)
			if released != tc.wantReleased {
				t.Errorf("released %v (%+v), want %v", released, after.Spec, tc.wantReleased)
			}
			if *after.Spec.LeaseTransitions != 3 {
				t.Errorf("leaseTransitions %d, want 3: a release keeps the count", *after.Spec.LeaseTransitions)
			}
		})
	}
}

// TestLabelReplacedGivenBack: a label hookback's labels replace (kubebuilder
// v4 scaffolds app.kubernetes.io/managed-by: kustomize on the manager's
// Deployment) is hookback's during the session and the scaffold's again
// after.
func TestLabelReplacedGivenBack(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	op := discover(t, c)
	tk := taker(c, logs, "dev-1")
	if err := tk.Take(ctx, op, redirects()); err != nil {
		t.Fatal(err)
	}
	deps := c.Client.AppsV1().Deployments(ns)
	d, _ := deps.Get(ctx, depName, metav1.GetOptions{})
	if d.Labels[registration.LabelManagedBy] != registration.ManagedByValue {
		t.Fatalf("during the session labels %v, want hookback's", d.Labels)
	}
	if _, err := tk.Restore(ctx, nil); err != nil {
		t.Fatal(err)
	}
	d, _ = deps.Get(ctx, depName, metav1.GetOptions{})
	want := map[string]string{"control-plane": "controller-manager", registration.LabelManagedBy: "kustomize"}
	if !reflect.DeepEqual(d.Labels, want) {
		t.Errorf("labels after %v, want %v", d.Labels, want)
	}
}
