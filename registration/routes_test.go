package registration

import "testing"

// TestRoutePaths: a route path gives back the target it was made from:
// the path to send to, and for a Service target the Service, so that a
// recorded review finds its upstream with no manifests at hand.
func TestRoutePaths(t *testing.T) {
	tests := []struct {
		name, path, upstreamPath string
		service                  *ServiceRef
	}{
		{name: "service", path: "/upstream/svc/system/webhook-service/443/mutate-v1-pod", upstreamPath: "/mutate-v1-pod",
			service: &ServiceRef{Namespace: "system", Name: "webhook-service", Port: 443, Path: "/mutate-v1-pod"}},
		{name: "service root", path: "/upstream/svc/system/webhook-service/8443/", upstreamPath: "/",
			service: &ServiceRef{Namespace: "system", Name: "webhook-service", Port: 8443, Path: "/"}},
		{name: "escaped path", path: "/upstream/svc/a/b/443/x%20y/z", upstreamPath: "/x%20y/z",
			service: &ServiceRef{Namespace: "a", Name: "b", Port: 443, Path: "/x y/z"}},
		{name: "url", path: "/upstream/url/webhook.example.com/443/validate", upstreamPath: "/validate"},
		{name: "a built-in's path", path: "/validate-pod-name", upstreamPath: "/validate-pod-name"},
		{name: "a service path without its port", path: "/upstream/svc/a/b", upstreamPath: "/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UpstreamPathOf(tt.path); got != tt.upstreamPath {
				t.Errorf("UpstreamPathOf = %q, want %q", got, tt.upstreamPath)
			}
			got, ok := ServiceOf(tt.path)
			switch {
			case tt.service == nil && ok:
				t.Errorf("ServiceOf = %+v, want none", got)
			case tt.service != nil && (!ok || got != *tt.service):
				t.Errorf("ServiceOf = %+v, %v; want %+v", got, ok, *tt.service)
			}
		})
	}
}
