package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
)

// fieldManager names hookback's writes in managedFields, as the webhook
// registration does.
const fieldManager = "hookback"

// queueLoop is what every controller shares: a typed rate-limited queue
// drained by workers that hand each key to reconcile. A reconcile error
// requeues the key with per-key exponential backoff; success forgets it.
type queueLoop[K comparable] struct {
	name      string
	log       *slog.Logger
	metrics   workqueue.MetricsProvider // nil: no metrics
	reconcile func(ctx context.Context, key K) error
}

// newQueue is called by Run rather than by Build, so a controller that is
// built but never run starts no goroutines.
func (l *queueLoop[K]) newQueue() workqueue.TypedRateLimitingInterface[K] {
	cfg := workqueue.TypedRateLimitingQueueConfig[K]{}
	if l.metrics != nil {
		// The queue registers metrics only when it has a name.
		cfg.Name = l.name
		cfg.MetricsProvider = l.metrics
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[K](), cfg)
}

// run waits for synced, runs workers until ctx is done, then shuts q down and
// returns once every worker has finished its current item.
func (l *queueLoop[K]) run(ctx context.Context, q workqueue.TypedRateLimitingInterface[K], workers int, synced ...cache.InformerSynced) error {
	defer q.ShutDown()
	l.log.Info("waiting for informer caches")
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("%s: caches not synced before shutdown: %w", l.name, context.Cause(ctx))
	}
	workers = max(workers, 1)
	l.log.Info("controller started", "workers", workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.processNext(ctx, q) {
			}
		})
	}
	<-ctx.Done()
	q.ShutDown()
	wg.Wait()
	l.log.Info("controller stopped")
	return nil
}

func (l *queueLoop[K]) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[K]) bool {
	key, shutdown := q.Get()
	if shutdown {
		return false
	}
	defer q.Done(key)
	err := l.reconcile(ctx, key)
	switch {
	case err == nil:
		q.Forget(key)
	case ctx.Err() != nil:
		// Shutting down: the error is the cancellation, not worth a retry.
		q.Forget(key)
	default:
		l.log.Warn("reconcile failed, retrying with backoff",
			"key", fmt.Sprint(key), "retries", q.NumRequeues(key), "error", err)
		q.AddRateLimited(key)
	}
	return true
}

// refused reports whether the apiserver turned a write down for a reason
// that retrying in a few milliseconds will not fix: RBAC, an admission
// webhook or validation said no. Such writes get a Warning Event and are not
// requeued; the next change to the object (or the informer resync) tries
// again, so a permanent refusal cannot turn into a hot loop of Events.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

// tombstoneObject unwraps the object a delete notification carries, which is
// a cache.DeletedFinalStateUnknown when the watch missed the deletion.
func tombstoneObject(obj any) any {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

// nopRecorder stands in when Deps.Recorder is nil.
type nopRecorder struct{}

func (nopRecorder) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

var _ events.EventRecorder = nopRecorder{}
