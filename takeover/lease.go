package takeover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/registration"
)

// ReleaseLeases waits (within wait) until op's pods are gone, then
// releases each Lease they still hold, as client-go's leader election does
// on a clean stop with ReleaseOnCancel (holder emptied, duration 1s): a
// local manager with the same leader-election ID leads at its next retry
// (2s by controller-runtime's defaults) instead of after the 15s the
// stopped holder's Lease would still run. A Lease is not taken from a pod
// that still runs: it would renew it. Each Lease released is marked as
// the session's (state: the holder it had), so that it is given back
// (GiveBackLeases) with the Deployment. It returns the Leases released.
func (t *Taker) ReleaseLeases(ctx context.Context, op *Operator, wait time.Duration, now func() time.Time) ([]string, error) {
	if len(op.Leases) == 0 {
		return nil, nil
	}
	if err := t.waitPodsGone(ctx, op, wait); err != nil {
		return nil, err
	}
	var out []string
	leases := t.Client.CoordinationV1().Leases(op.Namespace)
	for _, name := range op.Leases {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return out, fmt.Errorf("release Lease %s/%s: %w", op.Namespace, name, err)
		}
		if l.Spec.HolderIdentity == nil || !heldBy(*l.Spec.HolderIdentity, op.Pods) {
			continue // taken by someone else meanwhile
		}
		st := state{Holder: *l.Spec.HolderIdentity}
		l.Labels, l.Annotations = t.mark(l.Labels, l.Annotations, &st)
		releaseLease(l, now)
		if _, err := leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: "hookback"}); err != nil {
			return out, fmt.Errorf("release Lease %s/%s: %w", op.Namespace, name, err)
		}
		out = append(out, op.Namespace+"/"+name)
	}
	return out, nil
}

// waitPodsGone waits until no pod of op's is left.
func (t *Taker) waitPodsGone(ctx context.Context, op *Operator, wait time.Duration) error {
	d, err := t.Client.AppsV1().Deployments(op.Namespace).Get(ctx, op.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("take over %s: %w", op.Target, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("take over %s: its selector: %w", op.Target, err)
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		pods, err := t.Client.CoreV1().Pods(op.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err == nil && len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the pods of %s did not stop within %s (see kubectl -n %s get pods -l %s): their manager's Lease is left to expire",
				op.Target, wait, op.Namespace, labels.Selector(sel).String())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// releaseLease empties l's holder as client-go's leader election does on a
// clean stop (duration 1s, renewed now): whoever tries next leads.
func releaseLease(l *coordinationv1.Lease, now func() time.Time) {
	at := metav1.NewMicroTime(now())
	one, empty := int32(1), ""
	l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &empty, &one
	l.Spec.AcquireTime, l.Spec.RenewTime = &at, &at
}

// GiveBackLeases gives back the Leases this session released in ns, once
// their Deployment has its replicas again: hookback's marks go (the labels
// they replaced put back), and the Lease is released again unless a pod of
// ns holds it (a re-deployed manager that leads already). It is not put
// back to the holder it had before the take-over: that pod no longer runs,
// and client-go waits a whole lease duration (15s by controller-runtime's
// defaults) before it takes a Lease from a holder it has not seen renew;
// nor left to your local manager, stopped or about to be, for the same
// reason. Released, the restored pods lead at their first try. It returns
// the Leases given back.
func (t *Taker) GiveBackLeases(ctx context.Context, ns string, now func() time.Time) ([]string, error) {
	leases := t.Client.CoordinationV1().Leases(ns)
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: registration.LabelSession + "=" + t.Session})
	if err != nil {
		return nil, fmt.Errorf("list the Leases session %s released in %s: %w", t.Session, ns, err)
	}
	var out []string
	var errs []error
	for _, l := range list.Items {
		if _, ok := l.Annotations[AnnotationState]; !ok {
			continue // the session's own Lease, not one it released
		}
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			return t.giveBackLease(ctx, ns, l.Name, now)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("give back Lease %s/%s: %w", ns, l.Name, err))
			continue
		}
		out = append(out, "Lease/"+ns+"/"+l.Name)
	}
	return out, errors.Join(errs...)
}

func (t *Taker) giveBackLease(ctx context.Context, ns, name string, now func() time.Time) error {
	leases := t.Client.CoordinationV1().Leases(ns)
	l, err := leases.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	st, err := decodeState("Lease "+ns+"/"+name, l.Annotations)
	if err != nil {
		return err
	}
	l.Labels, l.Annotations = unmark(l.Labels, l.Annotations, st)
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	leads := holder != "" && t.podExists(ctx, ns, holder)
	if !leads {
		releaseLease(l, now)
	}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: registration.FieldManager}); err != nil {
		return err
	}
	if leads {
		t.Log.Info("leader-election Lease given back as it is: a pod of the re-deployed operator leads already", "lease", ns+"/"+name, "holder", holder)
		return nil
	}
	t.Log.Info("leader-election Lease given back released: the restored pods lead at their first try (not put back to the holder it had before the take-over, a pod that no longer runs)",
		"lease", ns+"/"+name, "holder before", st.Holder, "holder at exit", holder)
	return nil
}

// podExists reports whether holder (controller-runtime's POD_UUID) names a
// pod of ns.
func (t *Taker) podExists(ctx context.Context, ns, holder string) bool {
	pod, _, _ := strings.Cut(holder, "_")
	_, err := t.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
	return err == nil
}
