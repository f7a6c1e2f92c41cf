package cli

import (
	"time"

	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/kubeconfig"
)

// nativeSchemas are the OpenAPI schemas native kinds are judged against:
// the cluster's with --schemas-from-cluster (its own Kubernetes version,
// its aggregated APIs), else the bundled ones.
func nativeSchemas(o ValidateOptions) (crdvalidate.NativeSchemas, error) {
	if !o.SchemasFromCluster {
		return crdvalidate.Bundled{}, nil
	}
	cfg, err := kubeconfig.Load(o.Global.kubeconfig())
	if err != nil {
		return nil, err
	}
	cs, err := cfg.Clientset(30 * time.Second)
	if err != nil {
		return nil, err
	}
	return crdvalidate.ClusterSchemas(cs.Discovery().OpenAPIV3()), nil
}
