package takeover

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// ReleaseLeases waits (within wait) until op's pods are gone, then
// releases each Lease they still hold, as client-go's leader election does
// on a clean stop with ReleaseOnCancel (holder emptied, duration 1s): a
// local manager with the same leader-election ID leads at its next retry
// (2s by controller-runtime's defaults) instead of after the 15s the
// stopped holder's Lease would still run. A Lease is not taken from a pod
// that still runs: it would renew it. It returns the Leases released.
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
		at := metav1.NewMicroTime(now())
		one, empty := int32(1), ""
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = &empty, &one
		l.Spec.AcquireTime, l.Spec.RenewTime = &at, &at
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
