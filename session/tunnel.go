package session

import (
	"context"
	"log/slog"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/tunnel"
)

// This file is the run's glue to the reverse tunnel (`start --tunnel`);
// the relay's lifecycle itself lives in tunnel/.

// reach decides how the apiserver reaches this process: directly at the
// advertised address, or with --tunnel through the session's relay, whose
// Service name the certificate must then cover.
func reach(ctx context.Context, cl *kubeconfig.Cluster, advertiseAddr string, tc tunnel.Config, session, leaseRef string, log *slog.Logger) (advertise.Decision, *tunnel.Session, error) {
	if !tc.Enabled {
		d, err := Advertise(ctx, log, advertiseAddr, cl.Config)
		return d, nil, err
	}
	t, err := tunnel.NewSession(tunnel.SessionOptions{
		Clients: tunnel.Clients{Client: cl.Client, Dynamic: cl.Dynamic}, Rest: cl.Config.Rest,
		Session: session, Namespace: tc.Namespace, Image: tc.Image,
		Lease: leaseRef, AttachTimeout: tc.AttachTimeout, Log: log,
	})
	if err != nil {
		return advertise.Decision{}, nil, err
	}
	spec := t.Spec()
	d := advertise.Decision{Host: spec.ServiceHost(), Strategy: "tunnel",
		Reason: "--tunnel: the apiserver dials the relay's Service; hookback attaches to the relay through the apiserver's pod port-forward"}
	log.Info("reached through a reverse tunnel", "service", spec.ServiceHost(), "namespace", spec.Namespace)
	return d, t, nil
}

// whyTunnelReattached is the reason to verify again after the tunnel came
// back; the other reasons are the heartbeat's (the cluster regained).
const whyTunnelReattached = "the reverse tunnel attached again"

// redeployRelay writes the relay's objects again after the session regained
// the cluster: a stale cleanup by another run, while this laptop slept past
// its Lease, deletes the relay with the configurations.
func (r *run) redeployRelay(ctx context.Context, why string) {
	if r.tunnel == nil || why == whyTunnelReattached {
		return
	}
	if err := r.tunnel.Redeploy(ctx); err != nil {
		r.cfg.Log.Error("could not deploy the relay again; the webhooks fail open until it is back", "error", err)
	}
}

// startTunnel deploys the relay and keeps this process attached to it
// while the run works. It returns once the first attach is up, so that the
// canary that follows goes through the tunnel; every later attach verifies
// again.
func (r *run) startTunnel(ctx context.Context) error {
	if r.tunnel == nil {
		return nil
	}
	if err := r.tunnel.Deploy(ctx); err != nil {
		return err
	}
	a, err := r.tunnel.Attach(r.server.Addr().String(), r.metrics, func() { r.reverifyLater(whyTunnelReattached) })
	if err != nil {
		return err
	}
	r.working.Go(a.Run)
	return a.Wait(ctx)
}
