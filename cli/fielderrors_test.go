package cli

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiversion "k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hookback/hookback/advertise"
	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/conversion/roundtrip"
	"github.com/hookback/hookback/crdvalidate"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/lint"
	"github.com/hookback/hookback/load"
	"github.com/hookback/hookback/localcluster"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/session"
	"github.com/hookback/hookback/suite"
	"github.com/hookback/hookback/tunnel"
	"github.com/hookback/hookback/upstream"
)

// libraryTypes are the library types whose fields a field.Error may name,
// so that a test can prove each name is a real Go field.
var libraryTypes = []any{
	plan.Options{}, plan.UserWebhooks{}, plan.InspectorConfig{}, plan.ShadowConfig{}, registration.Template{},
	certs.Options{}, certs.ACMEOptions{}, tunnel.Config{}, registration.Scope{},
	incluster.Options{}, incluster.ServeConfig{}, webhooks.Options{}, upstream.Options{}, upstream.ShadowTarget{},
	audit.Options{}, kubeconfig.Options{}, advertise.Input{}, inspector.Options{}, plan.PolicyInput{}, plan.PolicyEnforce{}, upstream.ServiceRef{},
	registration.Heartbeat{}, suite.ExecOptions{}, localcluster.BinaryOptions{}, roundtrip.Options{}, lint.Options{},
	crdvalidate.Options{},
	load.Options{}, load.Inputs{}, load.Gates{},
}

// goField finds the Go field a field.Error names, pkg.Type.Field[.Field...].
func goField(name string) (reflect.StructField, bool) {
	parts := strings.Split(name, ".")
	if len(parts) < 3 {
		return reflect.StructField{}, false
	}
	for _, v := range libraryTypes {
		t := reflect.TypeOf(v)
		if t.String() != parts[0]+"."+parts[1] {
			continue
		}
		var f reflect.StructField
		for _, p := range parts[2:] {
			if t.Kind() != reflect.Struct {
				return reflect.StructField{}, false
			}
			var ok bool
			if f, ok = t.FieldByName(p); !ok {
				return reflect.StructField{}, false
			}
			t = f.Type
		}
		return f, true
	}
	return reflect.StructField{}, false
}

// invalid is a library call with one wrong value or more, for each rule
// that returns a field.Error; each case is what a Go program that embeds
// hookback might pass.
func invalidLibraryCalls(t *testing.T) []struct {
	name string
	call func() error
} {
	nowhere := kubeconfig.Options{Path: "/nonexistent/kubeconfig"}
	base := func(change func(*plan.Options)) plan.Options {
		o := plan.Options{Kubeconfig: nowhere, Session: "dev", Port: DefaultPort, LeaseNamespace: "default",
			Certs: certs.Options{Mode: certs.ModeSelfSigned, StateDir: t.TempDir()}, WebhookOptions: webhooks.DefaultOptions()}
		change(&o)
		return o
	}
	opts := func(change func(*plan.Options)) func() error {
		return func() error {
			_, err := plan.Complete(base(change))
			return err
		}
	}
	// rendered is render of what completes: the checks of what serves.
	rendered := func(change func(*plan.Options)) func() error {
		return func() error {
			c, err := plan.Complete(base(func(o *plan.Options) { o.AdvertiseAddress = "192.0.2.1"; change(o) }))
			if err == nil {
				_, err = session.Render(context.Background(), c)
			}
			return err
		}
	}
	acme := func(change func(*certs.ACMEOptions)) func() error {
		return func() error {
			o := certs.ACMEOptions{CA: "https://127.0.0.1:1/dir", HTTPPort: 80, Host: "127.0.0.1", StateDir: t.TempDir()}
			change(&o)
			_, err := certs.NewACMECerts(context.Background(), o)
			return err
		}
	}
	https, _ := url.Parse("https://192.0.2.1:9443")
	return []struct {
		name string
		call func() error
	}{
		{"session: session, port, durations, chain audit log", opts(func(o *plan.Options) {
			o.Session, o.Port, o.VerifyTimeout, o.LeaseDuration, o.ChainAuditLog = "Not_Valid", 0, -time.Second, time.Millisecond, "audit.log"
		})},
		{"session: upstreams", opts(func(o *plan.Options) {
			o.User = plan.UserWebhooks{Upstream: []string{"a=b", "ftp://x"}, Timeout: time.Minute, CertDir: "d"}
		})},
		{"session: manifests without an upstream", rendered(func(o *plan.Options) {
			o.User.Manifests = []string{filepath.Join("..", "testdata", "project", "config", "webhook")}
		})},
		{"session: inspector", opts(func(o *plan.Options) { o.Inspector = plan.InspectorConfig{Address: ":8082", Keep: -1} })},
		{"session: shadow", opts(func(o *plan.Options) {
			o.User.KeepFailurePolicy, o.User.Shadow = true, plan.ShadowConfig{Target: "ns/svc", CAFile: "ca.pem"}
		})},
		{"session: fault", opts(func(o *plan.Options) { o.User.Fault = "crash" })},
		{"session: shadow URL", opts(func(o *plan.Options) { o.User.Shadow = plan.ShadowConfig{Target: "http://192.0.2.1"} })},
		{"session: shadow CA alone", opts(func(o *plan.Options) { o.User.Shadow.CAFile = "ca.pem" })},
		{"session: certificate files", opts(func(o *plan.Options) { o.Certs.Mode = certs.ModeFiles })},
		{"session: certificate mode", opts(func(o *plan.Options) { o.Certs.Mode = "magic" })},
		{"session: the built-ins' options", opts(func(o *plan.Options) {
			o.WebhookOptions = webhooks.Options{BannedWords: []string{" "}, SidecarImage: "a b", CPUOversellFactor: 0.5}
		})},
		{"session: tunnel", opts(func(o *plan.Options) {
			o.AdvertiseAddress, o.Certs.Mode, o.Tunnel = "192.0.2.1", certs.ModeACME, tunnel.Config{Enabled: true, Namespace: "Not_Valid"}
		})},
		{"session: scope", opts(func(o *plan.Options) {
			o.Scope = registration.Scope{Namespaces: []string{"Not_OK"}, NamespaceSelector: "a in b", ObjectSelector: "=x", AllNamespaces: true, ConvertCRDs: []string{"widgets"}}
		})},
		{"scope: only mine without a username", func() error {
			_, _, err := registration.Scope{OnlyMine: true}.Apply(nil)
			return err
		}},
		{"upstream: insecure beyond loopback, a CA file that is no file", func() error {
			return upstream.Options{Base: https, Insecure: true, CAFile: "/nonexistent/ca.pem"}.Validate()
		}},
		{"upstream: a CA file without PEM", func() error {
			return upstream.Options{Base: https, CAFile: "fielderrors_test.go"}.Validate()
		}},
		{"load: every option", func() error {
			return load.Options{Rate: "1..300", Steps: 1, Step: -time.Second, Duration: -time.Second, Count: -1, Timeout: time.Hour}.Validate()
		}},
		{"load: gates", func() error { return load.Gates{MaxP99: -time.Second, MaxErrorRate: "2"}.Validate() }},
		{"load: nothing to send", func() error { _, err := load.Inputs{}.Read(); return err }},
		{"acme: CA", acme(func(o *certs.ACMEOptions) { o.CA = "http://x" })},
		{"acme: email", acme(func(o *certs.ACMEOptions) { o.Email = "Ops <ops@example.com>" })},
		{"acme: profile", acme(func(o *certs.ACMEOptions) { o.Profile = "short lived" })},
		{"acme: HTTP port", acme(func(o *certs.ACMEOptions) { o.HTTPPort = 0 })},
		{"acme: CA root missing", acme(func(o *certs.ACMEOptions) { o.CARootFile = "/nonexistent/root.pem" })},
		{"acme: CA root without PEM", acme(func(o *certs.ACMEOptions) { o.CARootFile = "fielderrors_test.go" })},
		{"acme: CA unreachable", acme(func(*certs.ACMEOptions) {})},
		{"serve", func() error {
			return incluster.Serve(context.Background(), incluster.ServeConfig{Kubeconfig: nowhere, Namespace: "Not_Valid",
				Port: 0, LeaseDuration: 1500 * time.Millisecond, ShutdownDelay: -time.Second, Template: []byte("x"), WebhookOptions: webhooks.DefaultOptions()})
		}},
		{"render --in-cluster", func() error {
			_, err := incluster.InCluster(incluster.Options{Namespace: "Not_Valid", Image: "a b", Replicas: 0, Template: []byte("x")})
			return err
		}},
		{"audit", func() error { return audit.Options{Operation: "DELETE", Concurrency: -1}.Validate() }},
		{"validate", func() error {
			return crdvalidate.Options{Objects: []string{"-"}, Subresource: "scale", FieldValidation: "strict"}.Validate()
		}},
		{"session: policies that are not there", rendered(func(o *plan.Options) { o.Policies.Paths = []string{"/nonexistent/policy.yaml"} })},
		{"scope: only mine on an old apiserver", func() error {
			cs := fake.NewClientset()
			cs.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &apiversion.Info{GitVersion: "v1.27.4"}
			s := registration.Scope{OnlyMine: true}
			return s.Resolve(context.Background(), cs, "https://192.0.2.1:6443", "remote")
		}},
		{"policy copies: only mine without a username", func() error {
			return registration.PreparePolicies(&registration.EnforcedPolicies{}, "dev", "", registration.Scope{OnlyMine: true})
		}},
		{"scope: unscoped on a cluster that is not local", func() error {
			err := registration.Scope{}.Refuse("server 192.0.2.1 is not on this machine")
			if !errors.Is(err, registration.ErrClusterWide) {
				t.Errorf("Refuse = %v, want ErrClusterWide", err)
			}
			return err
		}},
		{"advertise: no strategy applies", func() error {
			_, err := advertise.Decide(context.Background(), advertise.Input{Server: "https://192.0.2.1:6443"}, nil)
			return err
		}},
		{"kubeconfig: none at all", func() error {
			t.Setenv("KUBECONFIG", "")
			_, err := kubeconfig.Load(kubeconfig.Options{HomeDir: t.TempDir()})
			return err
		}},
		{"shadow: a Service that is not there", func() error {
			return upstream.CheckService(context.Background(), fake.NewClientset().CoreV1(), upstream.ServiceRef{Namespace: "system", Name: "webhook"})
		}},
		{"verify: the apiserver has no route here", func() error {
			return registration.Diagnose(errors.New(`failed calling webhook: Post "https://192.0.2.1:9443/": dial tcp 192.0.2.1:9443: connect: no route to host`), "https://192.0.2.1:9443", "default")
		}},
		{"verify: the canary ConfigMap is forbidden", func() error {
			return registration.Diagnose(apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "canary", errors.New("no")), "https://192.0.2.1:9443", "default")
		}},
		{"scope: a CRD's conversion left alone", func() error {
			return registration.Scope{Namespaces: []string{"team-a"}}.LeftAlone([]string{"widgets.example.com"})
		}},
		{"conversion fuzz: no CRD", func() error { return roundtrip.Options{N: 1}.Validate() }},
		{"lint: unknown rule and severity", func() error {
			return lint.Options{Disable: []string{"deadlock"}, FailOn: "fatal", Deadline: 1500 * time.Millisecond}.Validate()
		}},
		{"conversion fuzz: a schema the apiserver cannot read", func() error {
			crds, err := roundtrip.ReadCRDs("../conversion/roundtrip/testdata/gadgets-crd.yaml")
			if err != nil {
				return err
			}
			ref := "#/definitions/spec"
			crds[0].Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = apiextensionsv1.JSONSchemaProps{Type: "object", Ref: &ref}
			_, err = roundtrip.Run(context.Background(), roundtrip.Options{CRD: crds[0], Converter: nopConverter{}, N: 1})
			return err
		}},
	}
}

// nopConverter converts nothing: the runs it is given stop before.
type nopConverter struct{}

func (nopConverter) Convert(context.Context, conversion.Request) conversion.Answer {
	return conversion.Answer{}
}

// TestEveryLibraryFieldErrorNamesABoundFlag: every field a library error
// names, and every field its advice refers to, is a real Go field and is
// set by a flag that exists, so the CLI shows it as that flag; the library's
// text names no flag.
func TestEveryLibraryFieldErrorNamesABoundFlag(t *testing.T) {
	flags := map[string]bool{}
	for _, b := range commands(Extension{}).binders {
		for name := range b.fields {
			flags[name] = true
		}
	}
	for _, tt := range invalidLibraryCalls(t) {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			fes := field.All(err)
			if len(fes) == 0 {
				t.Fatalf("no field.Error in %v", err)
			}
			if strings.Contains(err.Error(), " --") || strings.HasPrefix(err.Error(), "--") {
				t.Errorf("the library's error names a flag:\n%v", err)
			}
			for _, fe := range fes {
				for _, name := range append([]string{fe.Field}, fe.Refs()...) {
					if _, ok := goField(name); !ok {
						t.Errorf("%q (in %q) is no Go field of the library's types", name, fe)
					}
					flag, ok := libraryFieldFlags()[name]
					if !ok || !flags[flag] {
						t.Errorf("%q (in %q) is set by no flag: add sets(%q) to the bind call of the flag that sets it", name, fe, name)
					}
				}
			}
			t.Logf("the library: %v\nthe CLI: %v", err, withFlagNames(err))
			if shown := withFlagNames(err).Error(); strings.Contains(shown, "Options.") || strings.Contains(shown, "Config.") {
				t.Errorf("the CLI still shows a field name:\n%s", shown)
			}
		})
	}
}

// TestSetsNamesRealFieldsOnce: each sets() of each command names a Go field
// of the library, and no field is set by two different flags, so the map
// from field to flag has one answer.
func TestSetsNamesRealFieldsOnce(t *testing.T) {
	byField := map[string]string{}
	for cmd, b := range commands(Extension{}).binders {
		for name, flag := range b.libraryFields {
			if _, ok := goField(name); !ok {
				t.Errorf("%s --%s sets %q, no Go field of the library's types (libraryTypes)", cmd, flag, name)
			}
			if prev, ok := byField[name]; ok && prev != flag {
				t.Errorf("%q is set by --%s and --%s", name, prev, flag)
			}
			byField[name] = flag
		}
	}
}

// TestLibraryCallerSeesFieldNames: a Go program that passes a wrong port
// reads the field it wrote, finds the error with errors.As, and the CLI
// would show the flag instead.
func TestLibraryCallerSeesFieldNames(t *testing.T) {
	_, err := plan.Complete(plan.Options{Session: "dev", Port: 0, LeaseNamespace: "default",
		Certs: certs.Options{Mode: certs.ModeSelfSigned, StateDir: t.TempDir()}, WebhookOptions: webhooks.DefaultOptions()})
	if !errors.Is(err, plan.ErrInvalidConfig) {
		t.Fatalf("Complete = %v, want an invalid configuration", err)
	}
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != "plan.Options.Port" || fe.Value != "0" {
		t.Fatalf("errors.As found %#v, want plan.Options.Port", fe)
	}
	if got, want := err.Error(), "plan.Options.Port 0: want a TCP port, 1 to 65535"; got != want {
		t.Errorf("the library says %q, want %q", got, want)
	}
	if got, want := withFlagNames(err).Error(), "--port 0: want a TCP port, 1 to 65535"; got != want {
		t.Errorf("the CLI says %q, want %q", got, want)
	}
	if !errors.Is(withFlagNames(err), plan.ErrInvalidConfig) {
		t.Error("the CLI's error lost the library's sentinel")
	}
}

// TestWithFlagNames: nested and joined field errors are all shown with
// flags, the text around them kept; an error without one is returned as is.
func TestWithFlagNames(t *testing.T) {
	inner := field.New("registration.Scope.Namespaces", `"A"`, "want a DNS label")
	outer := field.Errorf("plan.ShadowConfig.Target", "", "resolve: %w", inner)
	err := errors.Join(outer, field.Clause("registration.Scope.AllNamespaces", "", "contradicts {registration.Scope.Namespaces}"))
	want := "--shadow: resolve: --namespace \"A\": want a DNS label\n--all-namespaces contradicts --namespace"
	if got := withFlagNames(err).Error(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	plain := errors.New("plain")
	if got := withFlagNames(plain); got != plain {
		t.Errorf("an error without fields became %v", got)
	}
}
