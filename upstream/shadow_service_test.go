package upstream

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestCheckService(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "system", Name: "webhook-service"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}, {Name: "metrics", Port: 8080}}}}
	tests := []struct {
		name      string
		ref       ServiceRef
		forbidden bool
		err       string
	}{
		{name: "default port 443", ref: ServiceRef{Namespace: "system", Name: "webhook-service"}},
		{name: "named port", ref: ServiceRef{Namespace: "system", Name: "webhook-service", Port: 8080}},
		{name: "no such Service", ref: ServiceRef{Namespace: "system", Name: "webhook-svc"},
			err: `upstream.ServiceRef.Name system/webhook-svc:443: no Service "webhook-svc" in namespace "system": name the Service of the deployed webhook (kubectl get services -n system), or pass its https URL`},
		{name: "Service in another namespace", ref: ServiceRef{Namespace: "default", Name: "webhook-service"},
			err: `no Service "webhook-service" in namespace "default"`},
		{name: "no such port", ref: ServiceRef{Namespace: "system", Name: "webhook-service", Port: 9443},
			err: "upstream.ServiceRef.Port system/webhook-service:9443: Service system/webhook-service has no port 9443 (its ports: 443, 8080): pass NAMESPACE/SERVICE:PORT with the webhook's port"},
		{name: "not allowed to read it", ref: ServiceRef{Namespace: "system", Name: "webhook-service"}, forbidden: true,
			err: "your kubeconfig may not read the Service (the service proxy needs get services and create services/proxy in system)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := fake.NewClientset(svc)
			if tt.forbidden {
				cs.PrependReactor("get", "services", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "webhook-service", nil)
				})
			}
			err := CheckService(context.Background(), cs.CoreV1(), tt.ref)
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestServiceProxyURL(t *testing.T) {
	tests := []struct {
		name, host string
		ref        ServiceRef
		want       string
	}{
		{"default port", "https://127.0.0.1:6443", ServiceRef{Namespace: "system", Name: "webhook-service"},
			"https://127.0.0.1:6443/api/v1/namespaces/system/services/https:webhook-service:443/proxy"},
		{"port, host with a path", "https://example.com/k8s/", ServiceRef{Namespace: "system", Name: "wh", Port: 9443},
			"https://example.com/k8s/api/v1/namespaces/system/services/https:wh:9443/proxy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ServiceProxyURL(tt.host, tt.ref); got != tt.want {
				t.Fatalf("ServiceProxyURL = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestProxyRefusals(t *testing.T) {
	tests := []struct {
		name, body string
		code       int
		want, err  string
	}{
		{name: "the webhook's answer passes", code: http.StatusOK, body: `{"kind":"AdmissionReview"}`, want: `{"kind":"AdmissionReview"}`},
		{name: "the apiserver's refusal is said", code: http.StatusServiceUnavailable,
			body: `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"no endpoints available for service \"webhook-service\"","code":503}`,
			err: `the apiserver's service proxy to system/webhook-service:443 answered HTTP 503: no endpoints available for service "webhook-service": ` +
				`is the deployed webhook running? (kubectl get endpointslices -n system -l kubernetes.io/service-name=webhook-service)`},
		{name: "another refusal, no hint", code: http.StatusForbidden,
			body: `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"services \"webhook-service\" is forbidden","code":403}`,
			err:  `answered HTTP 403: services "webhook-service" is forbidden`},
		{name: "the webhook's own error passes", code: http.StatusInternalServerError, body: "boom", want: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tt.code)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := &http.Client{Transport: &proxyRefusals{next: srv.Client().Transport, ref: ServiceRef{Namespace: "system", Name: "webhook-service"}}}
			resp, err := c.Post(srv.URL, "application/json", strings.NewReader("{}"))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.code || string(b) != tt.want {
				t.Fatalf("got %d %q, want %d %q", resp.StatusCode, b, tt.code, tt.want)
			}
		})
	}
}
