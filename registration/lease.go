package registration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/errkind"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// LeaseName is the Lease that keeps session alive.
func LeaseName(session string) string { return "hookback-" + session }

// LeaseExpired reports whether l was not renewed within its duration. A Lease
// never renewed counts as expired.
func LeaseExpired(l *coordinationv1.Lease, now time.Time) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	d := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	return now.After(l.Spec.RenewTime.Add(d))
}

// Heartbeat keeps a session's Lease renewed, so that another run can tell a
// live session from one that crashed.
type Heartbeat struct {
	Client    kubernetes.Interface
	Namespace string
	Session   string
	Holder    string
	// Duration is how long the Lease stays valid without renewal.
	Duration time.Duration
	// Parts are recorded on the Lease for other sessions (AnnotationParts).
	Parts []string
	// Now is the apiserver's clock (kubeconfig.ServerClock), on which every
	// session writes and judges renewTime; nil is the local clock.
	Now func() time.Time
	// Labels are put on the Lease besides the session's own.
	Labels map[string]string
	// Meanwhile ends the warning of a failing heartbeat with what the
	// failure means for the holder; empty for none.
	Meanwhile string
	Log       *slog.Logger
}

func (h *Heartbeat) now() time.Time { return nowOf(h.Now) }

// nowOf reads clock, the local clock when it is nil.
func nowOf(clock func() time.Time) time.Time {
	if clock == nil {
		return time.Now()
	}
	return clock()
}

// ErrSessionInUse means another live process holds the session's Lease.
var ErrSessionInUse = errors.New("registration: session in use")

// ErrSessionTakenOver means another process took the session's Lease over
// while this one held it: this one could not renew it in time (a laptop
// asleep past it) and a new run of the session started meanwhile. What the
// session registered is that run's now.
var ErrSessionTakenOver = errors.New("registration: session taken over")

// HolderAlive tells whether the process named by a Lease's holder identity
// still runs. It is asked only for a live Lease held by someone else, so that
// a restart right after kill -9 on the same machine does not have to wait
// for the Lease to expire.
type HolderAlive func(holder string) bool

// Acquire takes the session's Lease for the first time: it refuses while
// another live process holds it (two terminals with the same --session would
// fight over one set of configurations), then renews it as its own.
func (h *Heartbeat) Acquire(ctx context.Context, alive HolderAlive) error {
	l, err := h.Client.CoordinationV1().Leases(h.Namespace).Get(ctx, LeaseName(h.Session), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("get lease %s/%s: %w", h.Namespace, LeaseName(h.Session), err)
	case l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != h.Holder && !LeaseExpired(l, h.now()) && alive(*l.Spec.HolderIdentity):
		return errkind.New(ErrSessionInUse, field.Advise("registration.Heartbeat.Session", "session in use: %q is held by %s (Lease %s/%s): stop that hookback, or pick another {registration.Heartbeat.Session}",
			h.Session, *l.Spec.HolderIdentity, h.Namespace, l.Name))
	}
	_, err = h.renew(ctx, true)
	return err
}

// Renew creates or renews the Lease. It reports created=true when the Lease
// did not exist, which during a run means someone cleaned the session up
// (for example after this laptop slept past the Lease), and
// ErrSessionTakenOver when another process holds it now.
func (h *Heartbeat) Renew(ctx context.Context) (created bool, err error) {
	return h.renew(ctx, false)
}

// renew is Renew; takeover lets it take the Lease from another holder,
// which only Acquire decides.
func (h *Heartbeat) renew(ctx context.Context, takeover bool) (created bool, err error) {
	leases := h.Client.CoordinationV1().Leases(h.Namespace)
	now := metav1.NewMicroTime(h.now())
	l, err := leases.Get(ctx, LeaseName(h.Session), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name:        LeaseName(h.Session),
				Namespace:   h.Namespace,
				Labels:      h.labels(nil),
				Annotations: map[string]string{AnnotationParts: strings.Join(h.Parts, ",")},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(h.Holder),
				LeaseDurationSeconds: ptr.To(int32(h.Duration / time.Second)),
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		if _, err := leases.Create(ctx, l, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return false, fmt.Errorf("create lease %s/%s: %w", h.Namespace, l.Name, err)
		}
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("get lease %s/%s: %w", h.Namespace, LeaseName(h.Session), err)
	}
	if holder := ptr.Deref(l.Spec.HolderIdentity, h.Holder); !takeover && holder != h.Holder {
		return false, errkind.New(ErrSessionTakenOver, fmt.Errorf("session %q was taken over by %s (Lease %s/%s) while this process could not renew it",
			h.Session, holder, h.Namespace, l.Name))
	}
	l = l.DeepCopy()
	// A Lease taken over from a crashed run of this session still names that
	// run's parts; other sessions decide their shared cleanup by them.
	l.Labels = h.labels(l.Labels)
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[AnnotationParts] = strings.Join(h.Parts, ",")
	l.Spec.HolderIdentity = ptr.To(h.Holder)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(h.Duration / time.Second))
	l.Spec.RenewTime = &now
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{FieldManager: FieldManager}); err != nil {
		return false, fmt.Errorf("renew lease %s/%s: %w", h.Namespace, l.Name, err)
	}
	return false, nil
}

// Run renews the Lease every interval until ctx is done. regained is
// called when the session may have lost its registration: the Lease had
// disappeared and was recreated, or renewals failed (the apiserver was
// unreachable or restarted) and succeed again. One warning is logged per
// outage, not one per failed renewal. When another process has taken the
// Lease over, Run calls lost with ErrSessionTakenOver and returns: the
// session is no longer this process's to renew.
func (h *Heartbeat) Run(ctx context.Context, interval time.Duration, regained func(why string), lost func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var failingSince time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		created, err := h.Renew(ctx)
		switch {
		case errors.Is(err, ErrSessionTakenOver):
			lost(err)
			return
		case err != nil && ctx.Err() == nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
				h.Log.Warn("session heartbeat failed; retrying"+h.Meanwhile, "lease", h.Namespace+"/"+LeaseName(h.Session), "error", err)
			}
			continue
		case created:
			h.Log.Warn("session lease was gone (cleaned up by another run?); made it again", "lease", h.Namespace+"/"+LeaseName(h.Session))
			failingSince = time.Time{}
			regained("lease recreated")
		case !failingSince.IsZero():
			h.Log.Info("session heartbeat recovered", "lease", h.Namespace+"/"+LeaseName(h.Session), "down_for", time.Since(failingSince).Round(time.Millisecond))
			failingSince = time.Time{}
			regained("apiserver reachable again")
		}
	}
}

// labels adds the Lease's labels to those it has.
func (h *Heartbeat) labels(have map[string]string) map[string]string {
	if have == nil {
		have = map[string]string{}
	}
	maps.Copy(have, h.Labels)
	have[LabelManagedBy], have[LabelSession] = ManagedByValue, h.Session
	return have
}

// Release deletes the Lease while this process holds it; a Lease another
// process took over is theirs, and stays.
func (h *Heartbeat) Release(ctx context.Context) error {
	leases := h.Client.CoordinationV1().Leases(h.Namespace)
	l, err := leases.Get(ctx, LeaseName(h.Session), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get lease %s/%s: %w", h.Namespace, LeaseName(h.Session), err)
	case ptr.Deref(l.Spec.HolderIdentity, h.Holder) != h.Holder:
		return nil
	}
	// Only the Lease as read: one taken over meanwhile is not deleted.
	err = leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete lease %s/%s: %w", h.Namespace, l.Name, err)
	}
	return nil
}

// AnnotationParts on a session Lease lists the webhooks and controllers the
// session runs.
const AnnotationParts = "hookback.dev/parts"

// LiveParts collects the parts of every live session but except, each
// with the session that runs it. It lists session Leases in every
// namespace where the user may, so that a session whose Lease namespace no
// configuration records (--webhooks none with --lease-namespace) is seen
// too; otherwise in namespaces, those the sessions' configurations
// recorded.
func LiveParts(ctx context.Context, cs kubernetes.Interface, namespaces []string, except string, now func() time.Time) (map[string]string, error) {
	live := map[string]string{}
	err := addLiveParts(ctx, cs, metav1.NamespaceAll, except, nowOf(now), live)
	switch {
	case err == nil:
		return live, nil
	case !apierrors.IsForbidden(errors.Unwrap(err)):
		return nil, err
	}
	for _, ns := range namespaces {
		if err := addLiveParts(ctx, cs, ns, except, nowOf(now), live); err != nil {
			return nil, err
		}
	}
	return live, nil
}

func addLiveParts(ctx context.Context, cs kubernetes.Interface, namespace, except string, now time.Time, live map[string]string) error {
	leases, err := cs.CoordinationV1().Leases(namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
	if err != nil {
		where := namespace
		if where == metav1.NamespaceAll {
			where = "every namespace"
		}
		return fmt.Errorf("list session leases in %s: %w", where, err)
	}
	for i := range leases.Items {
		l := &leases.Items[i]
		if l.Labels[LabelSession] == except || LeaseExpired(l, now) {
			continue
		}
		for _, p := range strings.Split(l.Annotations[AnnotationParts], ",") {
			if p != "" {
				live[p] = l.Labels[LabelSession]
			}
		}
	}
	return nil
}

// RunCleanups runs the cleanup of each part that is not live.
func RunCleanups(ctx context.Context, cleanups map[string]func(context.Context) error, live map[string]string, log *slog.Logger) error {
	var errs []error
	for part, cleanup := range cleanups {
		if session, ok := live[part]; ok {
			log.Info("another live session runs this part; leaving its shared objects", "part", part, "session", session)
			continue
		}
		err := cleanup(ctx)
		if apierrors.IsForbidden(err) {
			// Not this user's to clean: say so, but it is no failure.
			log.Warn("shared objects left in place: no permission to clean them up", "part", part, "error", err)
			continue
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteLease deletes a Lease and reports whether there was one.
func deleteLease(ctx context.Context, cs kubernetes.Interface, ns, name string) (bool, error) {
	err := cs.CoordinationV1().Leases(ns).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("delete lease %s/%s: %w", ns, name, err)
	}
	return true, nil
}
