package session

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/kubeconfig"
)

// Advertise decides the host the apiserver dials, with advertise's default
// strategies on the kubeconfig, and logs which one chose it and why the
// others were skipped. start, render and check all decide it this way.
func Advertise(ctx context.Context, log *slog.Logger, explicit string, cfg *kubeconfig.Config) (advertise.Decision, error) {
	d, err := advertise.Decide(ctx, advertise.Input{
		Explicit: explicit,
		Server:   cfg.Server,
		Context:  cfg.Context,
		ClusterAddresses: func(ctx context.Context) ([]net.IP, error) {
			return clusterAddresses(ctx, cfg)
		},
	}, advertise.Default())
	if len(d.Skipped) > 0 {
		log.Debug("advertise strategies skipped", "skipped", d.Skipped)
	}
	if err != nil {
		return d, err
	}
	log.Info("advertise address chosen", "address", d.Host, "strategy", d.Strategy, "why", d.Reason)
	return d, nil
}

// clusterAddresses lists the addresses the apiserver advertises (the
// EndpointSlices of the default/kubernetes Service). For kind that is the
// control-plane container's address on the kind network, from which advertise
// finds the local bridge when docker cannot tell; advertise asks only then.
func clusterAddresses(ctx context.Context, cfg *kubeconfig.Config) ([]net.IP, error) {
	cs, err := cfg.Clientset(10 * time.Second)
	if err != nil {
		return nil, err
	}
	list, err := cs.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kubernetes",
	})
	if err != nil {
		return nil, fmt.Errorf("list the apiserver's endpoints: %w", err)
	}
	var ips []net.IP
	for _, slice := range list.Items {
		for _, ep := range slice.Endpoints {
			for _, a := range ep.Addresses {
				if ip := net.ParseIP(a); ip != nil {
					ips = append(ips, ip)
				}
			}
		}
	}
	return ips, nil
}

// bindAddress is the configured bind address, else the advertised host when
// this machine owns it, else every interface.
func bindAddress(configured, host string) string {
	if configured != "" {
		return configured
	}
	if advertise.IsLocal(host) {
		return host
	}
	return ""
}
