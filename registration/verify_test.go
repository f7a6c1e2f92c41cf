package registration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestDiagnose(t *testing.T) {
	const url = "https://10.1.2.3:8443"
	webhookErr := func(cause string) error {
		return errors.New(`Internal error occurred: failed calling webhook "canary.hookback.dev": failed to call webhook: Post "https://10.1.2.3:8443/hookback-canary?timeout=5s": ` + cause)
	}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"connection refused", webhookErr("dial tcp 10.1.2.3:8443: connect: connection refused"), "set plan.Options.AdvertiseAddress to an address"},
		{"timeout", webhookErr("context deadline exceeded"), "timed out"},
		{"no route", webhookErr("dial tcp 10.1.2.3:8443: connect: no route to host"), "no route"},
		{"timeout suggests the tunnel", webhookErr("context deadline exceeded"), "use tunnel.Config.Enabled"},
		{"no route suggests the tunnel", webhookErr("dial tcp 10.1.2.3:8443: connect: no route to host"), "use tunnel.Config.Enabled"},
		{"unknown authority", webhookErr("tls: failed to verify certificate: x509: certificate signed by unknown authority"), "unknown certificate authority"},
		{"wrong SAN", webhookErr("tls: failed to verify certificate: x509: certificate is valid for 127.0.0.1, not 10.1.2.3"), "not valid for the address"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no")), "or pick another plan.Options.LeaseNamespace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Diagnose(tc.err, url, "default").Error()
			if !strings.Contains(got, tc.want) || !strings.Contains(got, url) {
				t.Errorf("Diagnose() = %q, want it to contain %q and the URL", got, tc.want)
			}
		})
	}
}

// TestVerifyWaitsForRelayEndpoints: through the tunnel, the apiserver may find
// no endpoint behind the relay's Service for a moment after the relay pod
// turns ready; Verify retries that until its deadline instead of failing.
func TestVerifyWaitsForRelayEndpoints(t *testing.T) {
	noEndpoints := errors.New(`Internal error occurred: failed calling webhook "canary.hookback.dev": failed to call webhook: Post "https://hookback-relay-s.ns.svc:443/hookback-canary?timeout=5s": no endpoints available for service "hookback-relay-s"`)
	tests := []struct {
		name     string
		tunnel   bool
		failures int // creates answered with noEndpoints before the canary is called
		wantErr  string
	}{
		{name: "passes once the endpoint is published", tunnel: true, failures: 3},
		{name: "reports it when it lasts", tunnel: true, failures: 1 << 30, wantErr: "the relay's Service has no ready endpoint"},
		{name: "without the tunnel it fails at once", failures: 2, wantErr: "no endpoints available"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			canary := NewCanary()
			client := fake.NewSimpleClientset()
			calls := 0
			client.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= tc.failures {
					return true, nil, noEndpoints
				}
				cm := a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap)
				canary.Handle(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Name: cm.Name}})
				return true, cm, nil
			})
			v := &Verifier{Client: client, Canary: canary, Namespace: "default", Session: "s",
				URL: "https://hookback-relay-s.ns.svc", Tunnel: tc.tunnel, Timeout: 500 * time.Millisecond}
			_, err := v.Verify(context.Background())
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Verify() = %v after %d creates, want success", err, calls)
			case tc.wantErr == "" && calls != tc.failures+1:
				t.Errorf("Verify() made %d creates, want %d", calls, tc.failures+1)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Verify() = %v, want an error containing %q", err, tc.wantErr)
			case !tc.tunnel && calls != 1:
				t.Errorf("Verify() made %d creates, want it to fail on the first", calls)
			}
		})
	}
}
