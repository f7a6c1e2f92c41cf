package incluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookback/hookback/registration"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// leader runs the controllers only while this replica holds the Lease, so
// two replicas never both write; every replica serves the webhooks
// regardless.
type leader struct {
	client      kubernetes.Interface
	namespace   string
	identity    string
	duration    time.Duration
	controllers []func(context.Context) error
	// presence is the session Lease the leader keeps (PresenceSession).
	presence *registration.Heartbeat
	log      *slog.Logger
	// leading is read by readiness: a leader is ready only once its caches
	// have synced.
	leading atomic.Bool
	gauge   prometheus.Gauge
	// errs are controller failures, reported when Run returns.
	mu   sync.Mutex
	errs []error
}

func newLeader(client kubernetes.Interface, cfg ServeConfig, controllers []func(context.Context) error, reg prometheus.Registerer, now func() time.Time) (*leader, error) {
	l := &leader{client: client, namespace: cfg.Namespace, identity: cfg.Identity, duration: cfg.LeaseDuration,
		controllers: controllers, log: cfg.Log,
		presence: &registration.Heartbeat{Client: client, Namespace: cfg.Namespace, Session: PresenceSession,
			Holder: cfg.Identity, Duration: cfg.LeaseDuration, Parts: slices.Concat(cfg.Webhooks, cfg.Controllers),
			Now: now, Labels: Labels(), Log: cfg.Log},
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookback_leader",
			Help: "1 while this replica holds the leader election Lease and runs the controllers."})}
	if err := reg.Register(l.gauge); err != nil {
		return nil, fmt.Errorf("register the leader metric: %w", err)
	}
	return l, nil
}

// Run campaigns for the Lease until ctx is done, running the controllers
// during each term. A lost term stops them, waits for them to return, and
// campaigns again: the webhooks keep being served meanwhile. On ctx's end
// the Lease is released, so another replica takes over at once.
func (l *leader) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		t := &term{}
		le, err := leaderelection.NewLeaderElector(l.config(t))
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		// ReleaseOnCancel releases the Lease as soon as the elector's
		// context ends, so that context ends only once the term's
		// controllers have returned: the next leader must not start while
		// a write of this one is still in flight.
		electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
		stopAfter := context.AfterFunc(ctx, func() { t.end(); stopElect() })
		le.Run(electCtx)
		stopAfter()
		stopElect()
		// Run starts the term's controllers on a goroutine of its own and
		// may return before they stop: end the term and wait for them,
		// so the next campaign cannot overlap it.
		t.end()
		if l.leading.Swap(false) {
			l.log.Info("leadership lost or released: controllers stopped", "identity", l.identity)
		}
		l.gauge.Set(0)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.Join(l.errs...)
}

// term is one leader election's time as leader.
type term struct {
	mu      sync.Mutex
	ended   bool
	stop    context.CancelFunc // the running controllers' context
	running sync.WaitGroup
}

// begin reports whether the term may start its controllers, and the
// context they run in: not once it has ended.
func (t *term) begin(ctx context.Context) (context.Context, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return nil, false
	}
	ctx, t.stop = context.WithCancel(ctx)
	t.running.Add(1)
	return ctx, true
}

// end stops the term's controllers and waits for them; it may be called
// more than once.
func (t *term) end() {
	t.mu.Lock()
	t.ended = true
	if t.stop != nil {
		t.stop()
	}
	t.mu.Unlock()
	t.running.Wait()
}

func (l *leader) config(t *term) leaderelection.LeaderElectionConfig {
	return leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: LeaseName, Namespace: l.namespace},
			Client:     l.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
			Labels:     Labels(),
		},
		// client-go's recommended ratios (15s, 10s, 2s) at any duration.
		LeaseDuration:   l.duration,
		RenewDeadline:   l.duration * 2 / 3,
		RetryPeriod:     l.duration * 2 / 15,
		ReleaseOnCancel: true,
		Name:            "hookback",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				ctx, ok := t.begin(ctx)
				if !ok {
					return
				}
				defer t.running.Done()
				l.lead(ctx)
			},
			// Run handles the end of a term (above), after this returns.
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != l.identity {
					l.log.Info("following the leader: it runs the controllers", "leader", id)
				}
			},
		},
	}
}

// lead runs every controller until the term ends.
func (l *leader) lead(ctx context.Context) {
	l.leading.Store(true)
	l.gauge.Set(1)
	l.log.Info("leading: controllers started", "identity", l.identity, "controllers", len(l.controllers))
	var wg sync.WaitGroup
	if l.announce(ctx) {
		wg.Go(func() {
			// Taken over means another replica leads now: it announces.
			l.presence.Run(ctx, l.duration/3, func(string) {}, func(err error) {
				l.log.Info("another replica took the presence Lease over", "error", err)
			})
		})
		defer l.withdraw(ctx)
	}
	for _, run := range l.controllers {
		wg.Go(func() {
			if err := run(ctx); err != nil {
				l.log.Error("controller stopped", "error", err)
				l.mu.Lock()
				l.errs = append(l.errs, err)
				l.mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// announce takes the presence Lease: laptop sessions read it, as they read
// each other's session Leases, and leave what the install's parts share with
// them (exec RBAC, node CPU) while it is live. A previous leader's Lease is
// taken over at once: only one replica leads.
func (l *leader) announce(ctx context.Context) bool {
	if err := l.presence.Acquire(ctx, func(string) bool { return false }); err != nil {
		if ctx.Err() == nil {
			l.log.Warn("could not announce the install to laptop sessions; their exit may undo what the parts share until the next event", "error", err)
		}
		return false
	}
	return true
}

// withdraw releases the presence Lease at the end of the term, after the
// controllers stopped.
func (l *leader) withdraw(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := l.presence.Release(ctx); err != nil {
		l.log.Warn("could not release the presence Lease; it expires by itself", "error", err)
	}
}
