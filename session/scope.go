package session

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/registration"
)

// resolveScope resolves the configured scope against the connected cluster
// and refuses to register cluster-wide on a cluster that is not local.
func resolveScope(ctx context.Context, sc registration.Scope, log *slog.Logger, cl *kubeconfig.Cluster) (registration.Scope, error) {
	if err := sc.Resolve(ctx, cl.Client, cl.Config.Server, cl.Config.Context); err != nil {
		return sc, err
	}
	_, why := registration.LocalCluster(cl.Config.Server, cl.Config.Context)
	if err := sc.Refuse(why); err != nil {
		return sc, err
	}
	log.Info("scope", "reaches", sc.String(), "local", sc.Local, "why", why)
	return sc, nil
}

// renderScope resolves the scope for render, which writes nothing: it asks
// the cluster only what --only-mine needs (who you are).
func renderScope(ctx context.Context, sc registration.Scope, kco kubeconfig.Options) (registration.Scope, error) {
	if !sc.OnlyMine {
		return sc, nil
	}
	kc, err := kubeconfig.Load(kco)
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
func newDrift(session, stateDir string, log *slog.Logger, cl *kubeconfig.Cluster, reg *registration.Registrar, kubectl string) *registration.Drift {
	dir := stateDir
	if dir == "" {
		dir = os.TempDir()
	}
	return &registration.Drift{Client: cl.Watch, Session: session, Reapply: reg.ApplyObject, Log: log,
		RestoreDir: filepath.Join(dir, "restore", session), Kubectl: kubectl}
}

// scopeConversions is the CRD filter of the session: the configured one,
// else the scope's (every CRD on a local cluster; on another only those
// named with --convert, or all with --all-namespaces), saying once which
// conversions it leaves alone.
func scopeConversions(configured func(string) bool, scope registration.Scope, log *slog.Logger, conv *conversions) func(string) bool {
	if configured != nil {
		return configured
	}
	var names []string
	for _, c := range conv.crds {
		if c.Conversion != nil {
			names = append(names, c.Name)
		}
	}
	if err := scope.LeftAlone(names); err != nil {
		log.Warn("CRD conversion not redirected", "why", err)
	}
	return scope.Convert
}
