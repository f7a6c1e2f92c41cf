package load

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Connect builds the Cluster of a rest.Config: a client with its
// credentials (rest.HTTPClientFor: no client-side rate limit, no retries)
// and a mapper over the apiserver's discovery.
func Connect(cfg *rest.Config) (Cluster, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return Cluster{}, fmt.Errorf("build the apiserver's client: %w", err)
	}
	server, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return Cluster{}, fmt.Errorf("the apiserver's URL: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, client)
	if err != nil {
		return Cluster{}, fmt.Errorf("build the discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return Cluster{Client: client, Server: server, Mapper: mapper}, nil
}
