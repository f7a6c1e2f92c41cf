package registration

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

func lease(session, parts string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: LeaseName(session), Namespace: "default",
			Labels:      map[string]string{LabelManagedBy: ManagedByValue, LabelSession: session},
			Annotations: map[string]string{AnnotationParts: parts},
		},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(30)), RenewTime: &metav1.MicroTime{Time: renewed}},
	}
}

// TestLivePartsServerClock: Leases are judged on the clock given (the
// apiserver's), not the local one: renewed an hour "ago" by the local clock
// is live when the apiserver's clock is an hour behind it.
func TestLivePartsServerClock(t *testing.T) {
	server := time.Now().Add(-time.Hour)
	cs := fake.NewClientset(lease("behind", "exec-rbac", server))
	tests := []struct {
		name  string
		now   func() time.Time
		alive bool
	}{
		{"apiserver's clock", func() time.Time { return server.Add(5 * time.Second) }, true},
		{"local clock", nil, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live, err := LiveParts(context.Background(), cs, []string{"default"}, "", tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if _, alive := live["exec-rbac"]; alive != tc.alive {
				t.Errorf("exec-rbac live = %v, want %v", alive, tc.alive)
			}
			opts := CleanupOptions{Stale: true, DefaultLeaseNamespace: "default", Now: tc.now}
			stale, err := opts.Selects(context.Background(), cs, "behind", "")
			if err != nil {
				t.Fatal(err)
			}
			if stale == tc.alive {
				t.Errorf("Selects(stale) = %v, want %v", stale, !tc.alive)
			}
		})
	}
}

// TestLivePartsEveryNamespace: a session whose Lease is in a namespace no
// configuration records is seen when the user may list Leases everywhere;
// without that right the recorded namespaces are listed one by one.
func TestLivePartsEveryNamespace(t *testing.T) {
	now := time.Now()
	elsewhere := lease("controllers-only", "exec-rbac", now)
	elsewhere.Namespace = "team-a"
	tests := []struct {
		name      string
		forbidden bool // listing Leases in every namespace is forbidden
		want      bool // exec-rbac live
	}{
		{"allowed everywhere", false, true},
		{"only the recorded namespaces", true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset(elsewhere, lease("alive", "pod-name", now))
			var listed []string
			cs.PrependReactor("list", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
				listed = append(listed, a.GetNamespace())
				if tc.forbidden && a.GetNamespace() == metav1.NamespaceAll {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "", errors.New("no"))
				}
				return false, nil, nil
			})
			live, err := LiveParts(context.Background(), cs, []string{"default"}, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, execRBAC := live["exec-rbac"]; execRBAC != tc.want || live["pod-name"] != "alive" {
				t.Errorf("live parts = %v (listed in %q), want exec-rbac %v and pod-name", live, listed, tc.want)
			}
		})
	}
}

func TestLivePartsAndCleanups(t *testing.T) {
	now := time.Now()
	cs := fake.NewClientset(
		lease("me", "exec-rbac,node-status", now),
		lease("alive", "exec-rbac,pod-name", now),
		lease("dead", "node-status", now.Add(-time.Hour)),
	)
	live, err := LiveParts(context.Background(), cs, []string{"default", "other"}, "me", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, dead := live["node-status"]; live["exec-rbac"] != "alive" || live["pod-name"] != "alive" || dead {
		t.Fatalf("live parts = %v, want exec-rbac and pod-name only (me excluded, dead expired)", live)
	}
	ran := map[string]bool{}
	cleanups := map[string]func(context.Context) error{
		"exec-rbac":   func(context.Context) error { ran["exec-rbac"] = true; return nil },
		"node-status": func(context.Context) error { ran["node-status"] = true; return nil },
	}
	if err := RunCleanups(context.Background(), cleanups, live, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if ran["exec-rbac"] || !ran["node-status"] {
		t.Errorf("ran = %v, want only node-status (another live session runs exec-rbac)", ran)
	}
}

func TestLeaseExpired(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name string
		l    *coordinationv1.Lease
		want bool
	}{
		{"fresh", lease("a", "", now), false},
		{"expired", lease("a", "", now.Add(-31*time.Second)), true},
		{"never renewed", &coordinationv1.Lease{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeaseExpired(tc.l, now); got != tc.want {
				t.Errorf("LeaseExpired = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAcquire(t *testing.T) {
	held := func(renewed time.Time) *coordinationv1.Lease {
		l := lease("dev", "", renewed)
		l.Spec.HolderIdentity = ptr.To("laptop/100")
		return l
	}
	tests := []struct {
		name    string
		lease   *coordinationv1.Lease
		alive   bool
		wantErr bool
	}{
		{name: "no lease yet", alive: true},
		{name: "held by a live process", lease: held(time.Now()), alive: true, wantErr: true},
		{name: "held by a dead process on this host", lease: held(time.Now()), alive: false},
		{name: "expired", lease: held(time.Now().Add(-time.Hour)), alive: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := fake.NewClientset()
			if tc.lease != nil {
				cs = fake.NewClientset(tc.lease)
			}
			h := &Heartbeat{Client: cs, Namespace: "default", Session: "dev", Holder: "laptop/200", Duration: 30 * time.Second, Parts: []string{"pod-name"}}
			err := h.Acquire(context.Background(), func(string) bool { return tc.alive })
			if tc.wantErr != errors.Is(err, ErrSessionInUse) {
				t.Fatalf("Acquire() = %v, want in-use error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			l, err := cs.CoordinationV1().Leases("default").Get(context.Background(), LeaseName("dev"), metav1.GetOptions{})
			if err != nil || *l.Spec.HolderIdentity != "laptop/200" || l.Annotations[AnnotationParts] != "pod-name" {
				t.Errorf("lease after Acquire = %v, %v; want held by laptop/200 with parts pod-name", l, err)
			}
		})
	}
}

// TestTakenOver: this process slept past its Lease and another run of the
// session acquired it. The heartbeat must not take it back, Run reports the
// loss and stops, and Release leaves the other run's Lease alone.
func TestTakenOver(t *testing.T) {
	ctx := context.Background()
	cs := fake.NewClientset()
	asleep := &Heartbeat{Client: cs, Namespace: "default", Session: "dev", Holder: "laptop/100", Duration: 30 * time.Second,
		Log: slog.New(slog.DiscardHandler)}
	if err := asleep.Acquire(ctx, func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	// The Lease expires while the laptop sleeps; a new run takes it over.
	l, err := cs.CoordinationV1().Leases("default").Get(ctx, LeaseName("dev"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}
	if _, err := cs.CoordinationV1().Leases("default").Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	awake := &Heartbeat{Client: cs, Namespace: "default", Session: "dev", Holder: "desktop/7", Duration: 30 * time.Second,
		Log: slog.New(slog.DiscardHandler)}
	if err := awake.Acquire(ctx, func(string) bool { return true }); err != nil {
		t.Fatalf("the new run could not take over the expired Lease: %v", err)
	}

	if _, err := asleep.Renew(ctx); !errors.Is(err, ErrSessionTakenOver) {
		t.Fatalf("Renew by the old holder = %v, want ErrSessionTakenOver", err)
	}
	lost := make(chan error, 1)
	runCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	asleep.Run(runCtx, time.Millisecond, func(string) { t.Error("regained, want lost") }, func(err error) { lost <- err })
	select {
	case err := <-lost:
		if !errors.Is(err, ErrSessionTakenOver) {
			t.Errorf("lost(%v), want ErrSessionTakenOver", err)
		}
	default:
		t.Fatal("Run returned without reporting the loss")
	}
	if err := asleep.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoordinationV1().Leases("default").Get(ctx, LeaseName("dev"), metav1.GetOptions{})
	if err != nil || ptr.Deref(got.Spec.HolderIdentity, "") != "desktop/7" {
		t.Fatalf("after the old holder's Release: %v, %v; want the Lease kept, held by desktop/7", got, err)
	}
	if err := awake.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases("default").Get(ctx, LeaseName("dev"), metav1.GetOptions{}); err == nil {
		t.Error("the holder's Release left its Lease")
	}
}
