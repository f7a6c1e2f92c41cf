package session

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/tunnel"
)

// newTestTunnel is session's tunnel in namespace ns on clients.
func newTestTunnel(t *testing.T, c tunnel.Clients, session, ns string) *tunnel.Session {
	t.Helper()
	tun, err := tunnel.NewSession(tunnel.SessionOptions{Clients: c, Session: session, Namespace: ns, Image: "img",
		Lease: "default/" + registration.LeaseName(session), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return tun
}

// TestTunnelConfig: the session's Validate and Permissions include the
// tunnel's (tunnel/ TestConfig and TestPermissions hold the rest).
func TestTunnelConfig(t *testing.T) {
	base := plan.Options{Session: "dev", Port: 8643, LeaseNamespace: "default", Certs: certs.Options{Mode: certs.ModeSelfSigned}, WebhookOptions: webhooks.DefaultOptions(),
		Tunnel: tunnel.Config{Enabled: true, Namespace: "hookback-system", Image: "img"}}
	tests := []struct {
		name   string
		mutate func(*plan.Options)
		want   string
	}{
		{name: "valid", mutate: func(*plan.Options) {}},
		{name: "an advertise address too", mutate: func(c *plan.Options) { c.AdvertiseAddress = "10.0.0.1" }, want: "exclude each other"},
		{name: "acme", mutate: func(c *plan.Options) { c.Certs.Mode = certs.ModeACME }, want: "cannot certify the relay's Service name"},
		{name: "no image: hookback's own", mutate: func(c *plan.Options) { c.Tunnel.Image = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mutate(&c)
			err := c.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("permissions: the tunnel part's, in the default namespace when none is given", func(t *testing.T) {
		c := base
		c.Tunnel.Namespace = ""
		perms, err := plan.Permissions(completed(t, c))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range perms {
			if p.Part == "tunnel" {
				if p.Namespace != tunnel.DefaultNamespace {
					t.Errorf("%+v: want namespace %s", p, tunnel.DefaultNamespace)
				}
				got = append(got, p.Verb+" "+p.Resource+"/"+p.Subresource)
			}
		}
		if !slices.Contains(got, "create pods/portforward") {
			t.Errorf("tunnel permissions %v lack the port-forward", got)
		}
	})
}

// TestRedeployRelay: when the session regains the cluster, a relay that a
// stale cleanup deleted meanwhile is written again; a tunnel re-attach
// alone writes nothing.
func TestRedeployRelay(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		why     string
		applied []string
	}{
		{why: "lease recreated", applied: []string{"secrets", "deployments", "services"}},
		{why: whyTunnelReattached},
	} {
		t.Run(tc.why, func(t *testing.T) {
			c := fakeTunnelClients()
			// The fake dynamic client cannot apply: record the applies.
			var applied []string
			c.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if p, ok := a.(k8stesting.PatchAction); ok && p.GetPatchType() == types.ApplyPatchType && p.GetNamespace() == "tun" {
					applied = append(applied, a.GetResource().Resource)
				}
				return true, &unstructured.Unstructured{}, nil
			})
			r := &run{tunnel: newTestTunnel(t, c, "s", "tun"), cfg: plan.Options{Log: slog.New(slog.DiscardHandler)}}
			r.redeployRelay(ctx, tc.why)
			if !slices.Equal(applied, tc.applied) {
				t.Errorf("applied %v, want %v", applied, tc.applied)
			}
			_, err := c.Client.CoreV1().Namespaces().Get(ctx, "tun", metav1.GetOptions{})
			if got, want := err == nil, tc.applied != nil; got != want {
				t.Errorf("tunnel namespace written: %v, want %v", got, want)
			}
		})
	}
}

// fakeTunnelClients are empty fake clients for a tunnel.
func fakeTunnelClients() tunnel.Clients {
	return tunnel.Clients{Client: fake.NewClientset(), Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}
}
