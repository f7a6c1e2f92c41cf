package registration

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
		{"connection refused", webhookErr("dial tcp 10.1.2.3:8443: connect: connection refused"), "--advertise-address"},
		{"timeout", webhookErr("context deadline exceeded"), "timed out"},
		{"no route", webhookErr("dial tcp 10.1.2.3:8443: connect: no route to host"), "no route"},
		{"timeout suggests the tunnel", webhookErr("context deadline exceeded"), "run start with --tunnel"},
		{"no route suggests the tunnel", webhookErr("dial tcp 10.1.2.3:8443: connect: no route to host"), "run start with --tunnel"},
		{"unknown authority", webhookErr("tls: failed to verify certificate: x509: certificate signed by unknown authority"), "unknown certificate authority"},
		{"wrong SAN", webhookErr("tls: failed to verify certificate: x509: certificate is valid for 127.0.0.1, not 10.1.2.3"), "not valid for the address"},
		{"forbidden", apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("no")), "create configmaps"},
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
