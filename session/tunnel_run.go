package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// reach decides how the apiserver reaches this process: directly at the
// advertised address, or with --tunnel through the session's relay, whose
// Service name the certificate must then cover.
func reach(ctx context.Context, cfg Config, cl *Cluster) (advertise.Decision, *reverseTunnel, error) {
	if !cfg.Tunnel.Enabled {
		d, err := Advertise(ctx, cfg.Log, cfg.AdvertiseAddress, cl.Config)
		return d, nil, err
	}
	t, err := newTunnel(cfg, cl)
	if err != nil {
		return advertise.Decision{}, nil, err
	}
	d := advertise.Decision{Host: t.spec.ServiceHost(), Strategy: "tunnel",
		Reason: "--tunnel: the apiserver dials the relay's Service; hookback attaches to the relay through the apiserver's pod port-forward"}
	cfg.Log.Info("reached through a reverse tunnel", "service", t.spec.ServiceHost(), "namespace", t.spec.Namespace)
	return d, t, nil
}

// whyTunnelReattached is the reason to verify again after the tunnel came
// back; the other reasons are the heartbeat's (the cluster regained).
const whyTunnelReattached = "the reverse tunnel attached again"

// redeployRelay writes the relay's objects again after the session regained
// the cluster: a stale cleanup by another run, while this laptop slept past
// its Lease, deletes the relay with the configurations. Applying what is
// there changes nothing, so the pod is not replaced.
func (r *run) redeployRelay(ctx context.Context, why string) {
	if r.tunnel == nil || why == whyTunnelReattached {
		return
	}
	if err := r.tunnel.deploy(ctx, r.leaseRef); err != nil {
		r.cfg.Log.Error("could not deploy the relay again; the webhooks fail open until it is back", "error", err)
	}
}

// startTunnel deploys the relay and keeps this process attached to it
// until bgCtx ends. It returns once the first attach is up, so that the
// canary that follows goes through the tunnel; every later attach verifies
// again.
func (r *run) startTunnel(ctx context.Context) error {
	t := r.tunnel
	if t == nil {
		return nil
	}
	t.adoptSecret(ctx)
	if err := t.deploy(ctx, r.leaseRef); err != nil {
		return err
	}
	up := make(chan struct{})
	attaches := 0
	a, err := t.attacher(r.server.Addr().String(), r.metrics, func() {
		attaches++ // the attacher calls OnUp from its one goroutine
		if attaches == 1 {
			close(up)
			return
		}
		r.reverifyLater(whyTunnelReattached)
	})
	if err != nil {
		return err
	}
	ended := make(chan struct{})
	r.working.Go(func(ctx context.Context) error {
		defer close(ended)
		if err := a.Start(ctx); err != nil {
			return fmt.Errorf("reverse tunnel: %w", err)
		}
		return nil
	})
	timeout := r.cfg.Tunnel.AttachTimeout
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	// A relay image that cannot be pulled fails now, not after the timeout.
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		select {
		case <-up:
			return nil
		case <-ended:
			// Refused for good (tunnel.ErrDenied); the error is in r.errs.
			return errors.New("the reverse tunnel stopped before it attached")
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
			if why := t.pullFailure(ctx); why != "" {
				return fmt.Errorf("the relay image %s cannot be pulled (%s): push it where the cluster can pull it (`make image`) and pass --relay-image", t.spec.Image, why)
			}
		case <-wait.C:
			_, why := t.podName(ctx)
			return fmt.Errorf("the reverse tunnel did not attach within %s (%v): check the relay with `kubectl -n %s describe pod -l %s`; an image the cluster cannot pull needs --relay-image",
				timeout, why, t.spec.Namespace, t.spec.Selector())
		}
	}
}

// cleanupRelays deletes the relays of the sessions opts selects, found by
// their Deployments (a crashed tunnel session leaves its relay running):
// in every namespace when the user may list Deployments cluster-wide, since
// each session chose its own --tunnel-namespace, else in fallback. A tunnel
// namespace a session created goes too once nothing else is left in it,
// except keep: the caller's own, where it is about to deploy its relay.
func cleanupRelays(ctx context.Context, cl *Cluster, fallback, keep string, opts registration.CleanupOptions, log *slog.Logger) ([]string, error) {
	deps, err := listRelays(ctx, cl, fallback, log)
	if err != nil || deps == nil {
		return nil, err
	}
	var removed []string
	var errs []error
	emptied := map[string]bool{}
	for _, d := range deps.Items {
		s := d.Labels[registration.LabelSession]
		if s == "" {
			continue
		}
		remove, err := opts.Selects(ctx, cl.Client, s, d.Annotations[registration.AnnotationLease])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !remove {
			continue
		}
		if err := deleteRelays(ctx, cl, d.Namespace, s, log); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, s)
		emptied[d.Namespace] = d.Namespace != keep
	}
	for _, ns := range slices.Sorted(maps.Keys(emptied)) {
		if emptied[ns] {
			errs = append(errs, removeTunnelNamespace(ctx, cl, ns, log))
		}
	}
	return removed, errors.Join(errs...)
}

// listRelays lists every relay Deployment, or those in fallback when the
// user may not list cluster-wide; nil when it may not list there either.
func listRelays(ctx context.Context, cl *Cluster, fallback string, log *slog.Logger) (*appsv1.DeploymentList, error) {
	opts := metav1.ListOptions{LabelSelector: registration.ManagedSelector + ",app.kubernetes.io/name=" + tunnel.AppName}
	deps, err := cl.Client.AppsV1().Deployments(metav1.NamespaceAll).List(ctx, opts)
	if err == nil {
		return deps, nil
	}
	if !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("list relays: %w", err)
	}
	deps, err = cl.Client.AppsV1().Deployments(fallback).List(ctx, opts)
	if apierrors.IsNotFound(err) || apierrors.IsForbidden(err) {
		log.Debug("no relays looked for", "namespace", fallback, "error", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list relays in %s: %w", fallback, err)
	}
	return deps, nil
}
