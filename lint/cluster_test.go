package lint

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/hookback/hookback/manifests"
)

// fakeCluster holds a Fail pod defaulter whose Service in webhooks has a
// Deployment behind it and no ready endpoint.
func fakeCluster() *fake.Clientset {
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	notReady := false
	labels := map[string]string{"app": "hook"}
	return fake.NewClientset(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "webhooks", Labels: map[string]string{"kubernetes.io/metadata.name": "webhooks"}}},
		&admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "pod-defaulter"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "mpod.example.com", FailurePolicy: &fail, SideEffects: &none,
				AdmissionReviewVersions: []string{"v1"},
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: nameLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", "kube-node-lease"}}}},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "webhooks", Name: "hook"}},
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "webhooks"}, Spec: corev1.ServiceSpec{Selector: labels}},
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: "webhooks"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "hook-x", Namespace: "webhooks", Labels: map[string]string{"kubernetes.io/service-name": "hook"}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &notReady}}}},
	)
}

func rulesOf(rep *Report) map[string]Severity {
	got := map[string]Severity{}
	for _, f := range rep.Findings {
		if s, ok := got[f.Rule]; !ok || f.Severity.AtLeast(s) {
			got[f.Rule] = f.Severity
		}
	}
	return got
}

// TestCluster: the cluster's configuration, Service, Deployment and
// endpoints make a self-deadlock and a webhook down now; the user's fixed
// configuration, applied over it, leaves only the endpoints.
func TestCluster(t *testing.T) {
	cluster, live, err := ReadCluster(context.Background(), fakeCluster())
	if err != nil {
		t.Fatal(err)
	}
	if live.MetricsErr == nil {
		t.Errorf("the fake clientset has no /metrics, yet no error")
	}
	cases := []struct {
		name string
		user []manifests.Document
		want map[string]Severity
	}{
		{"cluster alone", nil, map[string]Severity{"self-deadlock": Error, "no-ready-endpoints": Error}},
		{"with the user's fix applied", fixedDefaulter(t), map[string]Severity{"no-ready-endpoints": Error}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Read(Merge(cluster, c.user))
			if err != nil {
				t.Fatal(err)
			}
			in.Live = live
			rep := Run(in, Options{FailOn: "error"})
			if got := rulesOf(rep); !equalMaps(got, c.want) {
				t.Errorf("rules %v, want %v\n%s", got, c.want, table(t, rep))
			}
			for _, res := range rep.SARIF().Runs[0].Results {
				if p := res.Locations[0].PhysicalLocation; p != nil && p.ArtifactLocation.URI == ClusterSource {
					t.Errorf("%s: a cluster object located in a file %q", res.RuleID, p.ArtifactLocation.URI)
				}
			}
		})
	}
}

func fixedDefaulter(t *testing.T) []manifests.Document {
	docs := load(t, "self-deadlock.yaml")
	var out []manifests.Document
	for _, d := range docs {
		if d.Object.GetKind() != kindMutating {
			continue
		}
		u := d.Object.DeepCopy()
		hooks := u.Object["webhooks"].([]any)
		sel := hooks[0].(map[string]any)["namespaceSelector"].(map[string]any)
		expr := sel["matchExpressions"].([]any)[0].(map[string]any)
		expr["values"] = []any{"kube-system", "kube-node-lease", "webhooks"}
		u.Object["webhooks"].([]any)[0].(map[string]any)["clientConfig"] = map[string]any{"service": map[string]any{"name": "hook", "namespace": "webhooks"}}
		d.Object = u
		out = append(out, d)
	}
	return out
}

func TestLatency(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p99, err := parseLatency(f)
	if err != nil {
		t.Fatal(err)
	}
	// slow: 40 of 100 calls past 2.5 s: p99 is the last finite bound.
	// fast: 200 calls, the 198th within 0.005..0.1 s over its 110 calls.
	if p99["slow.example.com"] != 2.5 || math.Abs(p99["fast.example.com"]-(0.005+0.095*(198-90)/110.0)) > 1e-9 {
		t.Fatalf("p99 %v", p99)
	}
	in, err := Read(load(t, "chain-budget.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in.Hooks[0].Name, in.Hooks[1].Name = "slow.example.com", "fast.example.com"
	timeout := int32(3)
	in.Hooks[0].TimeoutSeconds = &timeout
	in.Live = &Live{P99: p99}
	rep := Run(in, Options{FailOn: "error", Disable: []string{"chain-budget"}})
	if got := rulesOf(rep); !equalMaps(got, map[string]Severity{"slow-webhook": Warning}) || len(rep.Findings) != 1 {
		t.Errorf("rules %v\n%s", got, table(t, rep))
	}
}

// TestCABundle: expired and expiring bundles offline; online, a url
// webhook on loopback whose certificate the bundle does or does not verify.
func TestCABundle(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	served := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	now := time.Now()
	cases := []struct {
		name   string
		bundle []byte
		live   bool
		want   map[string]Severity
	}{
		{"valid for a year", selfSigned(t, now.AddDate(1, 0, 0)), false, map[string]Severity{}},
		{"expires in a week", selfSigned(t, now.AddDate(0, 0, 7)), false, map[string]Severity{"ca-bundle": Warning}},
		{"expired", selfSigned(t, now.AddDate(0, 0, -1)), false, map[string]Severity{"ca-bundle": Error}},
		{"not PEM", []byte("hello"), false, map[string]Severity{"ca-bundle": Error}},
		{"online, verifies the served certificate", served, true, map[string]Severity{}},
		{"online, another CA", selfSigned(t, now.AddDate(1, 0, 0)), true, map[string]Severity{"ca-bundle": Error}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Read(load(t, "review-versions.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			h := in.Hooks[0]
			u := srv.URL + "/validate"
			h.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &u, CABundle: c.bundle}
			if c.live {
				in.Live = &Live{}
			}
			rep := Run(in, Options{FailOn: "error", Disable: []string{"review-versions"}})
			if got := rulesOf(rep); !equalMaps(got, c.want) {
				t.Errorf("rules %v, want %v\n%s", got, c.want, table(t, rep))
			}
			for _, res := range rep.SARIF().Runs[0].Results {
				if p := res.Locations[0].PhysicalLocation; p != nil && p.ArtifactLocation.URI == ClusterSource {
					t.Errorf("%s: a cluster object located in a file %q", res.RuleID, p.ArtifactLocation.URI)
				}
			}
		})
	}
}

func selfSigned(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook-ca"}, IsCA: true,
		NotBefore: notAfter.AddDate(-2, 0, 0), NotAfter: notAfter, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// TestClusterPolicies: the cluster's ValidatingAdmissionPolicy without a
// binding never runs; the user's binding, applied as if with
// kubectl apply, binds it without the paramRef it needs.
func TestClusterPolicies(t *testing.T) {
	fail := admissionregistrationv1.Fail
	cs := fake.NewClientset(&admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "replica-limit"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &fail,
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= int(params.data.maxReplicas)"}}}})
	cluster, _, err := ReadCluster(context.Background(), cs)
	if err != nil {
		t.Fatal(err)
	}
	var binding []manifests.Document
	for _, d := range load(t, "policy-params.yaml") {
		if d.Object.GetKind() == kindVAPB {
			binding = append(binding, d)
		}
	}
	cases := []struct {
		name string
		user []manifests.Document
		want map[string]Severity
	}{
		{"cluster alone", nil, map[string]Severity{"unbound-policy": Warning}},
		{"with the user's binding applied", binding, map[string]Severity{"policy-params": Error}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Read(Merge(cluster, c.user))
			if err != nil {
				t.Fatal(err)
			}
			if got := rulesOf(Run(in, Options{FailOn: "error"})); !equalMaps(got, c.want) {
				t.Errorf("rules %v, want %v", got, c.want)
			}
		})
	}
}
