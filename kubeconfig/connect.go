package kubeconfig

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookback/hookback/rbac"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// RequestTimeout bounds every registration request; informers watch
// without one.
const RequestTimeout = 30 * time.Second

// Cluster is a connected cluster and the clients hookback uses on it.
type Cluster struct {
	Config *Config
	// Client has a request timeout; Watch has none, for informers.
	Client  kubernetes.Interface
	Watch   kubernetes.Interface
	Dynamic dynamic.Interface
}

// Now is the time on the apiserver's clock, by which session Leases are
// written and judged.
func (c *Cluster) Now() time.Time {
	if c.Config == nil {
		return time.Now()
	}
	return c.Config.Clock.Now()
}

// Connect loads the kubeconfig and checks that the apiserver answers and
// that every permission in perms is granted, before anything is written.
func Connect(ctx context.Context, opts Options, log *slog.Logger, perms []rbac.Permission) (*Cluster, error) {
	cfg, err := Load(opts)
	if err != nil {
		return nil, err
	}
	cs, err := cfg.Clientset(RequestTimeout)
	if err != nil {
		return nil, err
	}
	v, err := ServerVersion(ctx, cs, cfg.Server)
	if err != nil {
		return nil, err
	}
	log.Info("connected", "server", cfg.Server, "context", cfg.Context, "version", v.GitVersion)
	results, err := CheckPermissions(ctx, cs, perms)
	if err != nil {
		return nil, err
	}
	if missing := Missing(results); len(missing) > 0 {
		who, _ := WhoAmI(ctx, cs)
		return nil, MissingError(who.Username, missing)
	}
	watch, err := cfg.Clientset(0)
	if err != nil {
		return nil, err
	}
	dyn, err := cfg.Dynamic(RequestTimeout)
	if err != nil {
		return nil, err
	}
	return &Cluster{Config: cfg, Client: cs, Watch: watch, Dynamic: dyn}, nil
}
