package session

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/registration"
)

// resolveScope resolves the configured scope against the connected cluster
// and refuses to register cluster-wide on a cluster that is not local.
func resolveScope(ctx context.Context, cfg Options, cl *kubeconfig.Cluster) (registration.Scope, error) {
	sc := cfg.Scope
	if err := sc.Resolve(ctx, cl.Client, cl.Config.Server, cl.Config.Context); err != nil {
		return sc, err
	}
	_, why := registration.LocalCluster(cl.Config.Server, cl.Config.Context)
	if err := sc.Refuse(why); err != nil {
		return sc, err
	}
	cfg.Log.Info("scope", "reaches", sc.String(), "local", sc.Local, "why", why)
	return sc, nil
}

// renderScope resolves the scope for render, which writes nothing: it asks
// the cluster only what --only-mine needs (who you are).
func renderScope(ctx context.Context, cfg Options) (registration.Scope, error) {
	sc := cfg.Scope
	if !sc.OnlyMine {
		return sc, nil
	}
	kc, err := kubeconfig.Load(cfg.Kubeconfig)
	if err != nil {
		return sc, err
	}
	cs, err := kc.Clientset(10 * time.Second)
	if err != nil {
		return sc, err
	}
	err = sc.Resolve(ctx, cs, kc.Server, kc.Context)
	return sc, err
}

// newDrift watches what the session registers for changes by others.
func newDrift(cfg Options, cl *kubeconfig.Cluster, reg *registration.Registrar, kubectl string) *registration.Drift {
	dir := cfg.Certs.StateDir
	if dir == "" {
		dir = os.TempDir()
	}
	return &registration.Drift{Client: cl.Watch, Session: cfg.Session, Reapply: reg.ApplyObject, Log: cfg.Log,
		RestoreDir: filepath.Join(dir, "restore", cfg.Session), Kubectl: kubectl}
}

// scopeConversions is the CRD filter of the session: the configured one,
// else the scope's (every CRD on a local cluster; on another only those
// named with --convert, or all with --all-namespaces), saying once which
// conversions it leaves alone.
func scopeConversions(cfg Options, conv *conversions) func(string) bool {
	if cfg.RedirectConversion != nil {
		return cfg.RedirectConversion
	}
	var names []string
	for _, c := range conv.crds {
		if c.Conversion != nil {
			names = append(names, c.Name)
		}
	}
	if msg := cfg.Scope.LeftAlone(names); msg != "" {
		cfg.Log.Warn(msg)
	}
	return cfg.Scope.Convert
}
