package upstream

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// ServiceRef is `--shadow NAMESPACE/SERVICE[:PORT]`: the Service of the
// webhook deployed in the cluster.
type ServiceRef struct {
	Namespace, Name string
	// Port is the Service's port; 0: 443.
	Port int32
}

func (r ServiceRef) port() int32 {
	if r.Port == 0 {
		return 443
	}
	return r.Port
}

func (r ServiceRef) String() string {
	return r.Namespace + "/" + r.Name + ":" + strconv.Itoa(int(r.port()))
}

// ServiceTarget reaches ref through the apiserver's service proxy with
// cfg's credentials, once CheckService found the Service and its port: a
// wrong name would otherwise only show as every review "different".
func ServiceTarget(ctx context.Context, cfg *rest.Config, ref ServiceRef) (ShadowTarget, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return ShadowTarget{}, fmt.Errorf("--shadow %s: client for the service proxy: %w", ref, err)
	}
	core, err := corev1client.NewForConfigAndClient(cfg, client)
	if err != nil {
		return ShadowTarget{}, fmt.Errorf("--shadow %s: client for the service proxy: %w", ref, err)
	}
	if err := CheckService(ctx, core, ref); err != nil {
		return ShadowTarget{}, err
	}
	return ShadowTarget{Proxy: ServiceProxyURL(cfg.Host, ref), Client: client}, nil
}

// ServiceProxyURL is the apiserver's service proxy for ref; https, as a
// webhook serves (the apiserver does not verify the Service's certificate
// on this path, your kubeconfig's CA verifies the apiserver).
func ServiceProxyURL(host string, ref ServiceRef) string {
	return strings.TrimSuffix(host, "/") + "/api/v1/namespaces/" + ref.Namespace + "/services/https:" + ref.Name + ":" +
		strconv.Itoa(int(ref.port())) + "/proxy"
}

// CheckService says whether the apiserver can proxy to ref: the Service
// exists and has the port.
func CheckService(ctx context.Context, services corev1client.ServicesGetter, ref ServiceRef) error {
	svc, err := services.Services(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return fmt.Errorf("--shadow %s: no Service %q in namespace %q: name the Service of the deployed webhook (kubectl get services -n %s), or pass its https URL",
			ref, ref.Name, ref.Namespace, ref.Namespace)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("--shadow %s: your kubeconfig may not read the Service (the service proxy needs get services and create services/proxy in %s): %w",
			ref, ref.Namespace, err)
	case err != nil:
		return fmt.Errorf("--shadow %s: read the Service: %w", ref, err)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		if p.Port == ref.port() {
			return nil
		}
		ports = append(ports, strconv.Itoa(int(p.Port)))
	}
	if len(ports) == 0 {
		ports = []string{"none"}
	}
	slices.Sort(ports)
	return fmt.Errorf("--shadow %s: Service %s/%s has no port %d (its ports: %s): pass NAMESPACE/SERVICE:PORT with the webhook's port",
		ref, ref.Namespace, ref.Name, ref.port(), strings.Join(ports, ", "))
}
