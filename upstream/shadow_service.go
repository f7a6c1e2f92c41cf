package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/hookback/hookback/field"
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
		return ShadowTarget{}, field.Errorf("upstream.ServiceRef.Name", ref.String(), "client for the service proxy: %w", err)
	}
	core, err := corev1client.NewForConfigAndClient(cfg, client)
	if err != nil {
		return ShadowTarget{}, field.Errorf("upstream.ServiceRef.Name", ref.String(), "client for the service proxy: %w", err)
	}
	if err := CheckService(ctx, core, ref); err != nil {
		return ShadowTarget{}, err
	}
	proxied := &http.Client{Transport: &proxyRefusals{next: client.Transport, ref: ref}, Timeout: client.Timeout}
	return ShadowTarget{Proxy: ServiceProxyURL(cfg.Host, ref), Client: proxied, Name: ref.String()}, nil
}

// proxyRefusals turns the apiserver's own refusal to proxy (a Status: no
// endpoints ready, the Service gone, the deployed webhook not answering)
// into an error that says so: the forwarder would show only "N bytes of
// JSON" of it. The deployed webhook's own answers pass as they are.
type proxyRefusals struct {
	next http.RoundTripper
	ref  ServiceRef
}

func (p *proxyRefusals) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(r)
	if err != nil || resp.StatusCode == http.StatusOK {
		return resp, err
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBytes))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("the apiserver's service proxy to %s answered HTTP %d: %w", p.ref, resp.StatusCode, err)
	}
	var st metav1.Status
	if json.Unmarshal(b, &st) == nil && st.Kind == "Status" && st.Message != "" {
		hint := ""
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusServiceUnavailable {
			// 404 too: the Service exists (start checked), its endpoints do not.
			hint = fmt.Sprintf(": is the deployed webhook running? (kubectl get endpointslices -n %s -l kubernetes.io/service-name=%s)", p.ref.Namespace, p.ref.Name)
		}
		return nil, fmt.Errorf("the apiserver's service proxy to %s answered HTTP %d: %s%s", p.ref, resp.StatusCode, st.Message, hint)
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, nil
}

// maxStatusBytes bounds reading a refusal: a Status is small; a larger
// answer is cut there, and the forwarder shows only the start of an
// answer that is not 200 anyway.
const maxStatusBytes = 64 << 10

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
		return field.New("upstream.ServiceRef.Name", ref.String(), fmt.Sprintf("no Service %q in namespace %q: name the Service of the deployed webhook (kubectl get services -n %s), or pass its https URL",
			ref.Name, ref.Namespace, ref.Namespace))
	case apierrors.IsForbidden(err):
		return field.Errorf("upstream.ServiceRef.Name", ref.String(), "your kubeconfig may not read the Service (the service proxy needs get services and create services/proxy in %s): %w",
			ref.Namespace, err)
	case err != nil:
		return field.Errorf("upstream.ServiceRef.Name", ref.String(), "read the Service: %w", err)
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
	return field.New("upstream.ServiceRef.Port", ref.String(), fmt.Sprintf("Service %s/%s has no port %d (its ports: %s): pass NAMESPACE/SERVICE:PORT with the webhook's port",
		ref.Namespace, ref.Name, ref.port(), strings.Join(ports, ", ")))
}
