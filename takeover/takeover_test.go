package takeover

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/registration"
)

const (
	ns       = "shop-system"
	depName  = "shop-controller-manager"
	vwcName  = "shop-validating-webhook-configuration"
	crdName  = "widgets.shop.io"
	vwcKey   = registration.KindValidatingHook + "/" + vwcName
	hookback = "https://10.0.0.1:8643/upstream/svc/shop-system/shop-webhook-service/443/validate-shop-io-v1-widget"
)

// redirects are what the session would put in place of the operator's
// webhook: your manifests' copy, pointed at hookback.
func redirects() Redirects {
	return Redirects{vwcKey: {"vwidget.shop.io": map[string]any{
		"name": "vwidget.shop.io", "clientConfig": map[string]any{"url": hookback, "caBundle": "SE9PSwo="},
		"rules":                   []any{map[string]any{"apiGroups": []any{"shop.io"}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"widgets"}}},
		"admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "failurePolicy": "Ignore",
	}}}
}

// snapshot is every object a take-over may touch, as the comparison of
// before and after sees it: without resourceVersion and managedFields.
func snapshot(t *testing.T, c Clients) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	d, err := c.Client.AppsV1().Deployments(ns).Get(ctx, depName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dm, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	out["deployment"] = clean(dm)
	for key, get := range map[string]func() (*unstructured.Unstructured, error){
		"vwc": func() (*unstructured.Unstructured, error) {
			return c.Dynamic.Resource(hookResources[registration.KindValidatingHook]).Get(ctx, vwcName, metav1.GetOptions{})
		},
		"crd": func() (*unstructured.Unstructured, error) {
			return c.Dynamic.Resource(crdResource).Get(ctx, crdName, metav1.GetOptions{})
		},
	} {
		o, err := get()
		if err != nil {
			t.Fatal(err)
		}
		out[key] = clean(o.Object)
	}
	return out
}

func clean(m map[string]any) map[string]any {
	unstructured.RemoveNestedField(m, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(m, "metadata", "managedFields")
	return m
}

func discover(t *testing.T, c Clients) *Operator {
	t.Helper()
	op, err := Discover(context.Background(), c, Target{Namespace: ns, Name: depName})
	if err != nil {
		t.Fatal(err)
	}
	return op
}

func TestDiscover(t *testing.T) {
	c, _ := fixture(t, "operator.yaml")
	op := discover(t, c)
	want := &Operator{Target: Target{Namespace: ns, Name: depName}, Replicas: 2,
		Services:       []string{ns + "/shop-webhook-service"},
		Pods:           []string{"shop-controller-manager-7d9f-abcde"},
		Configurations: []Configuration{{Kind: registration.KindValidatingHook, Name: vwcName, Webhooks: []string{"vwidget.shop.io"}, Namespaces: []string{"every namespace"}}},
		CRDs:           []string{crdName}, HPAs: []string{"shop"}, Leases: []string{"8f1c2a.shop.io"}}
	if !reflect.DeepEqual(op, want) {
		t.Errorf("Discover:\n got %+v\nwant %+v", op, want)
	}
}

func TestTakeAndGiveBackExactly(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	before := snapshot(t, c)
	op := discover(t, c)
	tk := taker(c, logs, "dev-1")
	if err := tk.Take(ctx, op, redirects()); err != nil {
		t.Fatal(err)
	}
	during := snapshot(t, c)
	if r, _, _ := unstructured.NestedInt64(during["deployment"].(map[string]any), "spec", "replicas"); r != 0 {
		t.Errorf("replicas during the session = %d, want 0", r)
	}
	hooks, _, _ := unstructured.NestedSlice(during["vwc"].(map[string]any), "webhooks")
	if url, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "url"); url != hookback {
		t.Errorf("the operator's webhook calls %q, want hookback", url)
	}
	if !reflect.DeepEqual(hooks[1], before["vwc"].(map[string]any)["webhooks"].([]any)[1]) {
		t.Errorf("the webhook of another Service was changed: %v", hooks[1])
	}
	for _, key := range []string{"vwc", "crd"} {
		anns, _, _ := unstructured.NestedStringMap(during[key].(map[string]any), "metadata", "annotations")
		if _, ok := anns["cert-manager.io/inject-ca-from"]; ok {
			t.Errorf("%s: the CA injector's annotation is still set during the session", key)
		}
		if _, ok := anns[AnnotationState]; !ok {
			t.Errorf("%s: no %s annotation: a crash would leave it taken over", key, AnnotationState)
		}
	}
	restored, err := tk.Restore(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(restored) != 3 {
		t.Errorf("restored %v, want the Deployment, the configuration and the CRD", restored)
	}
	if after := snapshot(t, c); !reflect.DeepEqual(after, before) {
		t.Errorf("not given back exactly:\nbefore %v\n after %v", before, after)
	}
}

func TestGiveBackKeepsOthersChanges(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	op := discover(t, c)
	tk := taker(c, logs, "dev-1")
	if err := tk.Take(ctx, op, redirects()); err != nil {
		t.Fatal(err)
	}
	// Someone re-deploys meanwhile: replicas 3, the webhook at the Service again.
	d, _ := c.Client.AppsV1().Deployments(ns).Get(ctx, depName, metav1.GetOptions{})
	three := int32(3)
	d.Spec.Replicas = &three
	if _, err := c.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := c.Dynamic.Resource(hookResources[registration.KindValidatingHook])
	o, _ := res.Get(ctx, vwcName, metav1.GetOptions{})
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	theirs := map[string]any{"service": map[string]any{"namespace": ns, "name": "shop-webhook-service", "path": "/v2"}}
	_ = unstructured.SetNestedField(hooks[0].(map[string]any), theirs, "clientConfig")
	_ = unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	if _, err := res.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.Restore(ctx, nil); err != nil {
		t.Fatal(err)
	}
	d, _ = c.Client.AppsV1().Deployments(ns).Get(ctx, depName, metav1.GetOptions{})
	if *d.Spec.Replicas != 3 || d.Annotations[AnnotationState] != "" || d.Labels[registration.LabelSession] != "" {
		t.Errorf("Deployment after give-back: replicas %d, annotations %v, labels %v; want their 3 and hookback's marks gone", *d.Spec.Replicas, d.Annotations, d.Labels)
	}
	o, _ = res.Get(ctx, vwcName, metav1.GetOptions{})
	hooks, _, _ = unstructured.NestedSlice(o.Object, "webhooks")
	if got, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "service", "path"); got != "/v2" {
		t.Errorf("their re-written webhook was replaced: path %q", got)
	}
	if o.GetAnnotations()[AnnotationState] != "" || o.GetLabels()[registration.LabelManagedBy] != "" {
		t.Errorf("hookback's marks left on the configuration: %v %v", o.GetAnnotations(), o.GetLabels())
	}
	for _, want := range []string{"scaled by someone else", "re-written by someone else"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, logs)
		}
	}
}

func TestTakeAgainAfterACrash(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	before := snapshot(t, c)
	if err := taker(c, logs, "dev-1").Take(ctx, discover(t, c), redirects()); err != nil {
		t.Fatal(err)
	}
	// kill -9, then the same session starts again: it must keep the
	// replicas and webhooks saved the first time, not the zero it left.
	op := discover(t, c)
	if err := taker(c, logs, "dev-1").Take(ctx, op, redirects()); err != nil {
		t.Fatal(err)
	}
	if op.Replicas != 2 {
		t.Errorf("replicas remembered = %d, want 2", op.Replicas)
	}
	// Another session may not take it over meanwhile.
	err := taker(c, logs, "dev-2").Take(ctx, discover(t, c), redirects())
	if err == nil || !strings.Contains(err.Error(), `taken over by hookback session "dev-1"`) {
		t.Errorf("a second session's take-over: %v", err)
	}
	if _, err := taker(c, logs, "dev-1").Restore(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, c); !reflect.DeepEqual(after, before) {
		t.Errorf("not given back exactly after a crash:\nbefore %v\n after %v", before, after)
	}
}

func TestRestoreStaleSelectsDeadSessions(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	before := snapshot(t, c)
	if err := taker(c, logs, "dead-1").Take(ctx, discover(t, c), redirects()); err != nil {
		t.Fatal(err)
	}
	// dead-1's Lease does not exist: it is stale.
	got, err := RestoreStale(ctx, c, registration.CleanupOptions{Stale: true, DefaultLeaseNamespace: "default"}, taker(c, logs, "x").Log)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"dead-1"}) {
		t.Errorf("RestoreStale = %v, want [dead-1]", got)
	}
	if after := snapshot(t, c); !reflect.DeepEqual(after, before) {
		t.Errorf("not given back exactly:\nbefore %v\n after %v", before, after)
	}
}

func TestReleaseLeases(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	op := discover(t, c)
	tk := taker(c, logs, "dev-1")
	// The pod is still there: its Lease is not taken from it.
	if _, err := tk.ReleaseLeases(ctx, op, 300*time.Millisecond, time.Now); err == nil || !strings.Contains(err.Error(), "did not stop") {
		t.Fatalf("release with the pod running: %v", err)
	}
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, op.Pods[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := tk.ReleaseLeases(ctx, op, time.Second, time.Now)
	if err != nil || !reflect.DeepEqual(got, []string{ns + "/8f1c2a.shop.io"}) {
		t.Fatalf("ReleaseLeases = %v, %v", got, err)
	}
	l, _ := c.Client.CoordinationV1().Leases(ns).Get(ctx, "8f1c2a.shop.io", metav1.GetOptions{})
	if *l.Spec.HolderIdentity != "" || *l.Spec.LeaseDurationSeconds != 1 || *l.Spec.LeaseTransitions != 3 {
		t.Errorf("Lease after release: %+v, want no holder, 1s, transitions kept", l.Spec)
	}
	other, _ := c.Client.CoordinationV1().Leases(ns).Get(ctx, "someone-else", metav1.GetOptions{})
	if *other.Spec.HolderIdentity != "other-pod_1234" {
		t.Errorf("another holder's Lease was released")
	}
}

func TestRefuseOLM(t *testing.T) {
	ctx := context.Background()
	c, _ := fixture(t, "operator.yaml")
	d, _ := c.Client.AppsV1().Deployments(ns).Get(ctx, depName, metav1.GetOptions{})
	d.OwnerReferences = []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "ClusterServiceVersion", Name: "shop.v0.1.0", UID: "u"}}
	if _, err := c.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := Discover(ctx, c, Target{Namespace: ns, Name: depName})
	for _, want := range []string{"OLM owns it (ClusterServiceVersion shop.v0.1.0)", "kubectl -n shop-system patch csv shop.v0.1.0 --type json", `"value":0`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Discover of an OLM Deployment: %v; want it to say %q", err, want)
		}
	}
}

func TestDiscoverMissing(t *testing.T) {
	c, _ := fixture(t, "operator.yaml")
	_, err := Discover(context.Background(), c, Target{Namespace: ns, Name: "nope"})
	if err == nil || !strings.Contains(err.Error(), "no such Deployment") {
		t.Errorf("Discover of a missing Deployment: %v", err)
	}
}

func TestParseTarget(t *testing.T) {
	for _, tt := range []struct {
		name, in, ns string
		want         Target
		err          string
	}{
		{name: "namespace from the default", in: "deployment/shop", ns: "shop-system", want: Target{"shop-system", "shop"}},
		{name: "namespace written", in: "ops/deploy/shop", ns: "x", want: Target{"ops", "shop"}},
		{name: "plural", in: "deployments.apps/shop", ns: "x", want: Target{"x", "shop"}},
		{name: "no namespace", in: "deployment/shop", err: "namespace is unknown"},
		{name: "another kind", in: "statefulset/shop", ns: "x", err: "only a Deployment"},
		{name: "no name", in: "deployment/", ns: "x", err: "want [NAMESPACE/]deployment/NAME"},
		{name: "bare name", in: "shop", ns: "x", err: "want [NAMESPACE/]deployment/NAME"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTarget(tt.in, tt.ns)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseTarget(%q) = %v, %v; want error %q", tt.in, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseTarget(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestDeployed(t *testing.T) {
	c, _ := fixture(t, "operator.yaml")
	got := Deployed(context.Background(), c, []string{ns + "/shop-webhook-service", ns + "/missing", "elsewhere/svc"})
	if want := []string{ns + "/deployment/" + depName}; !reflect.DeepEqual(got, want) {
		t.Errorf("Deployed = %v, want %v", got, want)
	}
}

// TestReDeployedDuringTheSession: someone re-deploys the operator while
// it is taken over: the next re-apply and the watch leave their replicas
// and webhooks as they made them (never fought) and say so once.
func TestReDeployedDuringTheSession(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	op := discover(t, c)
	tk := taker(c, logs, "dev-1")
	if err := tk.Take(ctx, op, redirects()); err != nil {
		t.Fatal(err)
	}
	d, _ := c.Client.AppsV1().Deployments(ns).Get(ctx, depName, metav1.GetOptions{})
	// kubectl apply of the scaffold puts its managed-by label back too.
	d.Spec.Replicas, d.Labels[registration.LabelManagedBy] = ptrTo(int32(2)), "kustomize"
	if _, err := c.Client.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res := c.Dynamic.Resource(hookResources[registration.KindValidatingHook])
	o, _ := res.Get(ctx, vwcName, metav1.GetOptions{})
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	_ = unstructured.SetNestedField(hooks[0].(map[string]any), map[string]any{"service": map[string]any{"namespace": ns, "name": "shop-webhook-service"}}, "clientConfig")
	_ = unstructured.SetNestedSlice(o.Object, hooks, "webhooks")
	if _, err := res.Update(ctx, o, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		tk.check(ctx, op)
		if err := tk.Take(ctx, op, redirects()); err != nil {
			t.Fatal(err)
		}
	}
	d, _ = c.Client.AppsV1().Deployments(ns).Get(ctx, depName, metav1.GetOptions{})
	o, _ = res.Get(ctx, vwcName, metav1.GetOptions{})
	hooks, _, _ = unstructured.NestedSlice(o.Object, "webhooks")
	if _, isURL, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "url"); *d.Spec.Replicas != 2 || isURL {
		t.Errorf("fought: replicas %d, webhook at hookback again %v", *d.Spec.Replicas, isURL)
	}
	for _, msg := range []string{"Deployment scaled up by someone else", "webhook configuration re-written by someone else"} {
		if n := strings.Count(logs.String(), msg); n != 1 {
			t.Errorf("%q said %d times, want once:\n%s", msg, n, logs)
		}
	}
	// Given back though its managed-by label is no longer hookback's:
	// their replicas kept, hookback's marks gone.
	if _, err := tk.Restore(ctx, nil); err != nil {
		t.Fatal(err)
	}
	d, _ = c.Client.AppsV1().Deployments(ns).Get(ctx, depName, metav1.GetOptions{})
	_, marked := d.Annotations[AnnotationState]
	if *d.Spec.Replicas != 2 || marked || d.Labels[registration.LabelSession] != "" || d.Labels[registration.LabelManagedBy] != "kustomize" {
		t.Errorf("re-deployed Deployment after the give-back: replicas %d, labels %v, annotations %v", *d.Spec.Replicas, d.Labels, d.Annotations)
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestReviewed(t *testing.T) {
	for _, tt := range []struct {
		name string
		hook map[string]any
		want string
	}{
		{name: "no selector", hook: map[string]any{}, want: "every namespace"},
		{name: "one namespace", hook: map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "team-a"}}}, want: "namespace team-a"},
		{name: "a selector", hook: map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{
			map[string]any{"key": "control-plane", "operator": "NotIn", "values": []any{"true"}}}}}, want: "namespaces control-plane notin (true)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := reviewed(tt.hook); got != tt.want {
				t.Errorf("reviewed = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPreview(t *testing.T) {
	c, _ := fixture(t, "operator.yaml")
	op := discover(t, c)
	live, err := c.Dynamic.Resource(hookResources[registration.KindValidatingHook]).Get(context.Background(), vwcName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := Preview(live, op.Configurations[0], redirects()[vwcKey])
	hooks, _, _ := unstructured.NestedSlice(got.Object, "webhooks")
	if url, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "url"); url != hookback {
		t.Errorf("previewed webhook calls %q, want hookback", url)
	}
	if svc, _, _ := unstructured.NestedString(hooks[1].(map[string]any), "clientConfig", "service", "name"); svc != "other" {
		t.Errorf("the other Service's webhook was changed: %v", hooks[1])
	}
	if got.GetName() != vwcName || got.GetResourceVersion() != "" || len(got.GetAnnotations()) != 0 {
		t.Errorf("preview metadata: name %q, resourceVersion %q, annotations %v; want the same name, no server fields, the injector set aside",
			got.GetName(), got.GetResourceVersion(), got.GetAnnotations())
	}
	if live.GetAnnotations()["cert-manager.io/inject-ca-from"] == "" {
		t.Errorf("Preview changed the live object")
	}
}

// TestDiscoverAfterACrash: a session killed while it held the take-over
// left the operator's webhooks and conversion pointing at hookback; the
// next start still finds them the operator's, by what was saved.
func TestDiscoverAfterACrash(t *testing.T) {
	ctx := context.Background()
	c, logs := fixture(t, "operator.yaml")
	want := discover(t, c)
	if err := taker(c, logs, "dev-1").Take(ctx, want, redirects()); err != nil {
		t.Fatal(err)
	}
	// The conversion redirect of registration.CRDs, as it leaves a CRD.
	res := c.Dynamic.Resource(crdResource)
	crd, _ := res.Get(ctx, crdName, metav1.GetOptions{})
	saved, _, _ := unstructured.NestedMap(crd.Object, "spec", "conversion")
	b, _ := json.Marshal(saved)
	anns := crd.GetAnnotations()
	anns[registration.AnnotationConversion] = string(b)
	crd.SetAnnotations(anns)
	_ = unstructured.SetNestedField(crd.Object, map[string]any{"strategy": "Webhook", "webhook": map[string]any{
		"clientConfig": map[string]any{"url": "https://10.0.0.1:8643/convert/widgets.shop.io/convert"}}}, "spec", "conversion")
	if _, err := res.Update(ctx, crd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := discover(t, c)
	if !reflect.DeepEqual(got.Configurations, want.Configurations) || !reflect.DeepEqual(got.CRDs, want.CRDs) {
		t.Errorf("after a crash Discover found %v %v, want %v %v", got.Configurations, got.CRDs, want.Configurations, want.CRDs)
	}
}
