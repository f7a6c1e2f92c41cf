package tunnel

import (
	"context"
	"encoding/base64"
	"log/slog"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/registration"
)

// relayObjects are one session's relay objects, as a tunnel session
// deploys them, recording its Lease.
func relayObjects(session, ns string) []runtime.Object {
	o := Manifests(Spec{Name: RelayName(session), Namespace: ns, Session: session, Image: "img", Secret: "s"})
	out := []runtime.Object{o.Secret, o.Deployment, o.Service}
	for _, obj := range out {
		obj.(metav1.Object).SetAnnotations(map[string]string{registration.AnnotationLease: "default/" + registration.LeaseName(session)})
	}
	return out
}

// fakeClients hold objs in a typed and a dynamic fake client alike.
func fakeClients(objs ...runtime.Object) Clients {
	return Clients{Client: fake.NewClientset(objs...), Dynamic: dynamicfake.NewSimpleDynamicClient(scheme.Scheme, objs...)}
}

// testSession is session's tunnel in namespace ns, with secret "fresh".
func testSession(t *testing.T, c Clients, session, ns string) *Session {
	t.Helper()
	s, err := NewSession(SessionOptions{Clients: c, Session: session, Namespace: ns, Image: "img",
		Lease: "default/" + registration.LeaseName(session), Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.spec.Secret = "fresh"
	return s
}

func TestTunnelNamespace(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		existing []runtime.Object
		kept     bool
	}{
		{name: "created when missing, deleted by the last session"},
		{name: "kept while another session's relay runs there", existing: relayObjects("other", "tun"), kept: true},
		{name: "never one hookback did not create", existing: []runtime.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tun"}}}, kept: true},
		{name: "kept while someone else's Secret is there", existing: []runtime.Object{&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "tun"}}}, kept: true},
		{name: "kept while someone else's pod runs there", existing: []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job-x", Namespace: "tun"}}}, kept: true},
		{name: "kept while someone else's Service is there", existing: []runtime.Object{&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "tun"}}}, kept: true},
		{name: "the session's own relay pod, still terminating, does not keep it", existing: []runtime.Object{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "relay-x", Namespace: "tun",
			Labels: map[string]string{registration.LabelManagedBy: registration.ManagedByValue, registration.LabelSession: "s"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClients(tc.existing...)
			tun := testSession(t, c, "s", "tun")
			if err := tun.ensureNamespace(ctx); err != nil {
				t.Fatal(err)
			}
			if err := tun.Remove(ctx); err != nil {
				t.Fatal(err)
			}
			_, err := c.Client.CoreV1().Namespaces().Get(ctx, "tun", metav1.GetOptions{})
			switch {
			case tc.kept && err != nil:
				t.Errorf("namespace deleted: %v, want it kept", err)
			case !tc.kept && !apierrors.IsNotFound(err):
				t.Errorf("namespace after the last session: %v, want not found", err)
			}
		})
	}
}

// TestAdoptSecret: a restart of a crashed session reuses the secret its
// relay pod was started with; nobody else's.
func TestAdoptSecret(t *testing.T) {
	const ns = "hookback-system"
	unlabelled := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: RelayName("bare"), Namespace: ns},
		Data: map[string][]byte{SecretKey: []byte("not-hookbacks")}}
	for _, tc := range []struct {
		name, session, want string
		existing            []runtime.Object
	}{
		{name: "the crashed run's relay", session: "mine", existing: relayObjects("mine", ns), want: "s"},
		{name: "none left: the fresh secret", session: "mine", want: "fresh"},
		{name: "another session's relay is not ours", session: "mine", existing: relayObjects("other", ns), want: "fresh"},
		{name: "a Secret of that name without hookback's labels", session: "bare", existing: []runtime.Object{unlabelled}, want: "fresh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tun := testSession(t, fakeClients(tc.existing...), tc.session, ns)
			tun.adoptSecret(context.Background())
			if tun.spec.Secret != tc.want {
				t.Errorf("secret %q, want %q", tun.spec.Secret, tc.want)
			}
		})
	}
}

// TestDeploy: Deploy writes the namespace, then the Secret, Deployment and
// Service, each recording the session's Lease, with the secret of the relay
// a crashed run left; Redeploy writes them again with the secret it has.
func TestDeploy(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		existing   []runtime.Object
		redeploy   bool
		wantSecret string
	}{
		{name: "deploy, nothing left", wantSecret: "fresh"},
		{name: "deploy after a crash: the relay's secret", existing: relayObjects("s", "tun"), wantSecret: "s"},
		{name: "redeploy keeps the secret it has", existing: relayObjects("s", "tun"), redeploy: true, wantSecret: "fresh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fakeClients(tc.existing...)
			// The fake dynamic client cannot apply: record the applies.
			var applied []string
			secret := ""
			c.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
				p, ok := a.(k8stesting.PatchAction)
				if !ok || p.GetPatchType() != types.ApplyPatchType || p.GetNamespace() != "tun" {
					return false, nil, nil
				}
				u := &unstructured.Unstructured{}
				if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
					return true, nil, err
				}
				if lease := u.GetAnnotations()[registration.AnnotationLease]; lease != "default/hookback-s" {
					t.Errorf("%s %s records the Lease %q, want default/hookback-s", u.GetKind(), u.GetName(), lease)
				}
				if u.GetKind() == "Secret" {
					b64, _, _ := unstructured.NestedString(u.Object, "data", SecretKey)
					b, err := base64.StdEncoding.DecodeString(b64)
					if err != nil {
						return true, nil, err
					}
					secret = string(b)
				}
				applied = append(applied, a.GetResource().Resource)
				return true, u, nil
			})
			tun := testSession(t, c, "s", "tun")
			deploy := tun.Deploy
			if tc.redeploy {
				deploy = tun.Redeploy
			}
			if err := deploy(ctx); err != nil {
				t.Fatal(err)
			}
			if want := []string{"secrets", "deployments", "services"}; !slices.Equal(applied, want) {
				t.Errorf("applied %v, want %v", applied, want)
			}
			if tun.spec.Secret != tc.wantSecret || secret != tc.wantSecret {
				t.Errorf("secret %q, applied %q, want %q", tun.spec.Secret, secret, tc.wantSecret)
			}
			if _, err := c.Client.CoreV1().Namespaces().Get(ctx, "tun", metav1.GetOptions{}); err != nil {
				t.Errorf("tunnel namespace: %v", err)
			}
		})
	}
}

func TestConfig(t *testing.T) {
	base := Config{Enabled: true, Namespace: "hookback-system", Image: "img"}
	tests := []struct {
		name      string
		mutate    func(*Config)
		advertise string
		tlsMode   string
		want      []string
	}{
		{name: "valid", mutate: func(*Config) {}},
		{name: "disabled: nothing checked", mutate: func(c *Config) { *c = Config{Namespace: "Bad_NS"} }, advertise: "10.0.0.1", tlsMode: certs.ModeACME},
		{name: "an advertise address too", mutate: func(*Config) {}, advertise: "10.0.0.1", want: []string{"exclude each other"}},
		{name: "acme", mutate: func(*Config) {}, tlsMode: certs.ModeACME, want: []string{"cannot certify the relay's Service name"}},
		{name: "bad namespace", mutate: func(c *Config) { c.Namespace = "Hookback_System" }, want: []string{`tunnel.Config.Namespace "Hookback_System": `}},
		{name: "no image", mutate: func(c *Config) { c.Image = "" }, want: []string{"tunnel.Config.Enabled needs tunnel.Config.Image"}},
		{name: "every problem at once", mutate: func(c *Config) { c.Namespace, c.Image = "Hookback_System", "" }, advertise: "10.0.0.1",
			want: []string{"tunnel.Config.Namespace", "tunnel.Config.Image", "plan.Options.AdvertiseAddress and tunnel.Config.Enabled exclude each other"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			tc.mutate(&c)
			tlsMode := tc.tlsMode
			if tlsMode == "" {
				tlsMode = certs.ModeSelfSigned
			}
			err := c.Validate(tc.advertise, tlsMode)
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want %q", err, w)
				}
			}
		})
	}
	t.Run("defaults", func(t *testing.T) {
		if c := (Config{}).WithDefaults(); c.Namespace != DefaultNamespace || c.AttachTimeout != DefaultAttachTimeout {
			t.Errorf("WithDefaults() = %+v", c)
		}
	})
}

// TestPermissions: the relay's objects and the port-forward, in its
// namespace only.
func TestPermissions(t *testing.T) {
	var got []string
	for _, p := range Permissions("hookback-system") {
		if p.Namespace != "hookback-system" || p.Part != "tunnel" {
			t.Errorf("%+v: want namespace hookback-system, part tunnel", p)
		}
		got = append(got, p.Verb+" "+p.Resource+"/"+p.Subresource)
	}
	for _, want := range []string{"create deployments/", "delete services/", "create secrets/", "list pods/", "create pods/portforward", "get pods/portforward"} {
		if !slices.Contains(got, want) {
			t.Errorf("tunnel permissions %v lack %q", got, want)
		}
	}
}
