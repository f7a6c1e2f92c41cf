package e2e

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

var (
	mutatingGVR   = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "mutatingwebhookconfigurations"}
	validatingGVR = schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}
)

// deployedOperator is e2e/crmanager deployed as `make deploy` leaves a
// kubebuilder operator (kwok runs its pods): the manager's Deployment, the
// webhook Service selecting its pods, its webhook configurations (failing
// closed, as scaffolded) for widgets of its namespace, and the Lease its
// leader election holds.
type deployedOperator struct {
	ns, deployment, mutating, validating, lease string
}

func deployOperator(t *testing.T, dyn dynamic.Interface, injectCA bool) deployedOperator {
	t.Helper()
	ctx := context.Background()
	ns := namespace(t)
	op := deployedOperator{ns: ns, deployment: "op-controller-manager", mutating: ns + "-mutating-webhook-configuration",
		validating: ns + "-validating-webhook-configuration", lease: "8f1c2a.e2e.hookback.dev"}
	labels := map[string]string{"control-plane": "controller-manager"}
	_, err := env.client.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: op.deployment, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "controller:latest"}}, TerminationGracePeriodSeconds: ptr.To[int64](0)}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "op-webhook-service"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod string
	eventually(t, "the operator's pods running", func(ctx context.Context) (bool, error) {
		list, err := env.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		if err != nil || len(list.Items) != 2 {
			return false, err
		}
		pod = list.Items[0].Name
		return list.Items[0].Status.Phase == corev1.PodRunning && list.Items[1].Status.Phase == corev1.PodRunning, nil
	})
	now := metav1.NowMicro()
	_, err = env.client.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: op.lease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(pod + "_0b6c4f4e-1111-2222-3333-444455556666"), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now, LeaseTransitions: ptr.To[int32](0)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hook := func(name, path string) map[string]any {
		return map[string]any{"name": name, "admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "failurePolicy": "Fail",
			"clientConfig": map[string]any{"caBundle": "Q0EgaW5qZWN0ZWQgYnkgY2VydC1tYW5hZ2VyCg==",
				"service": map[string]any{"namespace": ns, "name": "op-webhook-service", "path": path}},
			"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": ns}},
			"rules": []any{map[string]any{"apiGroups": []any{"e2e.hookback.dev"}, "apiVersions": []any{"v1"},
				"operations": []any{"CREATE", "UPDATE"}, "resources": []any{"widgets"}}}}
	}
	for gvr, o := range map[schema.GroupVersionResource]map[string]any{
		mutatingGVR:   {"kind": "MutatingWebhookConfiguration", "metadata": map[string]any{"name": op.mutating}, "webhooks": []any{hook("mwidget-v1.kb.io", "/mutate-e2e-hookback-dev-v1-widget")}},
		validatingGVR: {"kind": "ValidatingWebhookConfiguration", "metadata": map[string]any{"name": op.validating}, "webhooks": []any{hook("vwidget-v1.kb.io", "/validate-e2e-hookback-dev-v1-widget")}},
	} {
		o["apiVersion"] = "admissionregistration.k8s.io/v1"
		u := &unstructured.Unstructured{Object: o}
		if injectCA {
			u.SetAnnotations(map[string]string{"cert-manager.io/inject-ca-from": ns + "/op-serving-cert"})
		}
		if _, err := dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		name := u.GetName()
		t.Cleanup(func() { _ = dyn.Resource(gvr).Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	return op
}

// state is every object a take-over touches, as the comparison of before
// and after sees it: without resourceVersion, managedFields and generation
// (which every write moves), the Deployment without its status.
func (op deployedOperator) state(t *testing.T, dyn dynamic.Interface) map[string]any {
	t.Helper()
	ctx := context.Background()
	out := map[string]any{}
	get := func(key string, ri dynamic.ResourceInterface, name string) {
		o, err := ri.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"resourceVersion", "managedFields", "generation"} {
			unstructured.RemoveNestedField(o.Object, "metadata", f)
		}
		unstructured.RemoveNestedField(o.Object, "status")
		out[key] = o.Object
	}
	get("deployment", dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(op.ns), op.deployment)
	get("mutating", dyn.Resource(mutatingGVR), op.mutating)
	get("validating", dyn.Resource(validatingGVR), op.validating)
	return out
}

func (op deployedOperator) replicas(t *testing.T) int32 {
	t.Helper()
	d, err := env.client.AppsV1().Deployments(op.ns).Get(context.Background(), op.deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// takenOver checks the session's effect: no replicas, the operator's
// configurations (same names) calling hookback, and the apiserver calling
// the local manager through them: its defaulter colors a widget blue and its
// validator refuses a size above 10.
func (op deployedOperator) takenOver(t *testing.T, dyn dynamic.Interface, p *proc, name string) {
	t.Helper()
	if r := op.replicas(t); r != 0 {
		t.Errorf("the deployed operator has %d replicas during the session, want 0", r)
	}
	for gvr, cfg := range map[schema.GroupVersionResource]string{mutatingGVR: op.mutating, validatingGVR: op.validating} {
		o, err := dyn.Resource(gvr).Get(context.Background(), cfg, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		url, _, _ := unstructured.NestedString(hooks[0].(map[string]any), "clientConfig", "url")
		if !strings.Contains(url, "/upstream/svc/"+op.ns+"/op-webhook-service/443/") {
			t.Errorf("%s calls %q, want hookback", cfg, url)
		}
		if _, ok := o.GetAnnotations()["cert-manager.io/inject-ca-from"]; ok {
			t.Errorf("%s: the CA injector's annotation is still on it: cert-manager would write its CA over hookback's", cfg)
		}
	}
	widget := func(name string, size int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "e2e.hookback.dev/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": size}}}
	}
	w, err := dyn.Resource(widgetsV1).Namespace(op.ns).Create(context.Background(), widget(name, 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a widget through the taken-over webhooks: %v", err)
	}
	if c, _, _ := unstructured.NestedString(w.Object, "spec", "color"); c != "blue" {
		t.Errorf("widget color %q, want the local defaulter's blue", c)
	}
	_, err = dyn.Resource(widgetsV1).Namespace(op.ns).Create(context.Background(), widget(name+"-big", 11), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "must be at most 10 (crmanager's validator)") {
		t.Errorf("a widget of size 11: %v, want the local validator's denial", err)
	}
	p.whWaitLogLine(t, "webhook configuration taken over", op.validating)
}

func (op deployedOperator) givenBack(t *testing.T, dyn dynamic.Interface, before map[string]any) {
	t.Helper()
	if after := op.state(t, dyn); !reflect.DeepEqual(after, before) {
		b, _ := json.MarshalIndent(before, "", " ")
		a, _ := json.MarshalIndent(after, "", " ")
		t.Errorf("not given back exactly:\nbefore %s\n after %s", b, a)
	}
}

// TestTakeOver: `start --take-over` of a deployed operator, with the
// local controller-runtime manager (e2e/crmanager) as upstream: the
// apiserver calls the local webhooks through the operator's own
// configurations, the Deployment has no replicas and its manager's Lease
// is released; after Ctrl-C, after kill -9 and the next start, and after
// kill -9 and `hookback cleanup`, every object equals its state before.
func TestTakeOver(t *testing.T) {
	t.Parallel() // its own namespaces and configurations; the Widget CRD is only read
	dyn := dynamicClient(t)
	ensureWidgetCRD(t, dyn)
	mgr := startCRManager(t)
	for _, tc := range []struct {
		name     string
		injectCA bool
	}{{"plain", false}, {"cert-manager injects the CA", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			op := deployOperator(t, dyn, tc.injectCA)
			before := op.state(t, dyn)
			args := []string{"--webhooks", "none", "--controllers", "none", "--take-over", op.ns + "/deployment/" + op.deployment,
				"--upstream", mgr.URL, "--upstream-ca", mgr.Cert}

			// render shows what start would change, and changes nothing.
			out, errOut, code := hookback(t, env.kubeconfig, append([]string{"render", "--advertise-address", "127.0.0.1"}, args...)...)
			for _, want := range []string{"# take-over: " + op.ns + "/deployment/" + op.deployment + " is scaled to 0 (from 2)",
				"name: " + op.validating, "/upstream/svc/" + op.ns + "/op-webhook-service/443/validate-e2e-hookback-dev-v1-widget"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Errorf("render --take-over: exit %d, output lacks %q:\n%s\n%s", code, want, out, errOut)
				}
			}
			op.givenBack(t, dyn, before)

			// A local manager that leads under the deployed one's Lease.
			leader := startCRManager(t, "--leader-elect-id", op.lease, "--leader-elect-namespace", op.ns)
			p := start(t, args...)
			p.ready(t)
			op.takenOver(t, dyn, p, "w1")
			for _, want := range []string{"take-over: " + op.ns + "/deployment/" + op.deployment + " scaled to 0 (from 2", "lease:    released " + op.ns + "/" + op.lease} {
				if !strings.Contains(p.stdout.String(), want) {
					t.Errorf("banner lacks %q:\n%s", want, p.stdout.String())
				}
			}
			eventually(t, "the local manager to lead", func(ctx context.Context) (bool, error) {
				l, err := env.client.CoordinationV1().Leases(op.ns).Get(ctx, op.lease, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				h := ptr.Deref(l.Spec.HolderIdentity, "")
				return h != "" && !strings.HasPrefix(h, op.deployment), nil
			})
			leader.stop(t)
			p.signal(syscall.SIGINT)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			op.givenBack(t, dyn, before)

			// kill -9, then the next start of the same session.
			p = start(t, args...)
			p.ready(t)
			p.signal(syscall.SIGKILL)
			p.wait(t)
			next := start(t, append(args, "--session", p.session)...)
			next.ready(t)
			op.takenOver(t, dyn, next, "w2")
			next.signal(syscall.SIGINT)
			if code := next.wait(t); code != 0 {
				t.Fatalf("exit code %d", code)
			}
			op.givenBack(t, dyn, before)

			// kill -9, then cleanup.
			p = start(t, args...)
			p.ready(t)
			p.signal(syscall.SIGKILL)
			p.wait(t)
			out, errOut, code = hookback(t, env.kubeconfig, "cleanup", "--session", p.session)
			if code != 0 || !strings.Contains(out, p.session) {
				t.Fatalf("cleanup: exit %d\n%s\n%s", code, out, errOut)
			}
			op.givenBack(t, dyn, before)
		})
	}
}
