package session

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/registration"
)

// newFakeClients are a clientset and a dynamic client that journal every
// write in j. The dynamic fake of client-go v0.36 has no server-side apply:
// its plain tracker applies only to an object that exists, as a strategic
// merge (fixture.go, tracker.Apply), so a first apply fails NotFound, and
// the field-managed tracker needs a type converter for every kind. A
// reactor stores an apply as a create or update of the whole object, which
// is what hookback's applies amount to.
func newFakeClients(t *testing.T, j *journal, objects ...runtime.Object) (*fake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	cs := fake.NewClientset(objects...)
	for _, verb := range []string{"create", "update", "delete"} {
		cs.PrependReactor(verb, "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
			j.add(verb + " lease")
			return false, nil, nil
		})
	}
	// A dry-run create is admitted and stored nowhere.
	cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c, ok := a.(k8stesting.CreateActionImpl)
		return ok && len(c.CreateOptions.DryRun) > 0, c.GetObject(), nil
	})
	cs.PrependReactor("list", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j.add("list nodes")
		return false, nil, nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		mutatingGVR: "MutatingWebhookConfigurationList", validatingGVR: "ValidatingWebhookConfigurationList",
		registration.CRDResource:              "CustomResourceDefinitionList",
		{Version: "v1", Resource: "services"}: "ServiceList", {Group: "apps", Version: "v1", Resource: "deployments"}: "DeploymentList",
		{Version: "v1", Resource: "secrets"}: "SecretList", {Version: "v1", Resource: "pods"}: "PodList",
	})
	dyn.PrependReactor("patch", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			j.add("patch " + p.GetName())
			return false, nil, nil
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		j.add("apply " + obj.GetName())
		tr := dyn.Tracker()
		if err := tr.Create(p.GetResource(), obj, p.GetNamespace()); err != nil {
			if err := tr.Update(p.GetResource(), obj, p.GetNamespace()); err != nil {
				return true, nil, err
			}
		}
		return true, obj, nil
	})
	dyn.PrependReactor("delete", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		j.add("delete " + a.(k8stesting.DeleteAction).GetName())
		return false, nil, nil
	})
	return cs, dyn
}

// callsBack makes the fake clientset behave like an apiserver with the
// admission plugins on, for the one request verification depends on: a
// dry-run create of a canary ConfigMap calls the webhook the session's
// canary configuration names, over HTTPS with its caBundle, as the
// apiserver would. Nothing else is called back.
func callsBack(t *testing.T, j *journal, cs *fake.Clientset, dyn *dynamicfake.FakeDynamicClient) {
	cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm := a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap)
		session := cm.Labels[registration.LabelCanary]
		if session == "" {
			return false, nil, nil
		}
		obj, err := dyn.Tracker().Get(validatingGVR, "", "hookback-canary-"+session)
		if err != nil {
			return true, nil, fmt.Errorf("no canary configuration to call: %w", err)
		}
		if err := callWebhook(obj.(*unstructured.Unstructured), cm); err != nil {
			return true, nil, err
		}
		j.add("canary called")
		return true, cm, nil
	})
}

// callWebhook posts an AdmissionReview for obj to the first webhook of cfg.
func callWebhook(cfg *unstructured.Unstructured, obj *corev1.ConfigMap) error {
	hooks, _, _ := unstructured.NestedSlice(cfg.Object, "webhooks")
	if len(hooks) == 0 {
		return fmt.Errorf("configuration %s has no webhooks", cfg.GetName())
	}
	cc, _, _ := unstructured.NestedMap(hooks[0].(map[string]any), "clientConfig")
	url, _ := cc["url"].(string)
	bundle, err := base64.StdEncoding.DecodeString(fmt.Sprint(cc["caBundle"]))
	if err != nil {
		return fmt.Errorf("caBundle: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return fmt.Errorf("configuration %s: caBundle has no certificate", cfg.GetName())
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	review, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u1", Name: obj.Name, Namespace: obj.Namespace, Operation: admissionv1.Create,
			Kind:     metav1.GroupVersionKind{Version: "v1", Kind: "ConfigMap"},
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Object: runtime.RawExtension{Raw: raw}},
	})
	if err != nil {
		return err
	}
	client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	defer client.CloseIdleConnections()
	// The apiserver tells the webhook how long it waits: timeoutSeconds,
	// 10 by default.
	timeout, ok, _ := unstructured.NestedInt64(hooks[0].(map[string]any), "timeoutSeconds")
	if !ok {
		timeout = 10
	}
	resp, err := client.Post(fmt.Sprintf("%s?timeout=%ds", url, timeout), "application/json", bytes.NewReader(review))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("canary answered %s", resp.Status)
	}
	return nil
}

// localConfig is a kubeconfig of a local cluster: scope and advertise
// decide on it without a network.
func localConfig() *kubeconfig.Config {
	return &kubeconfig.Config{Server: "https://127.0.0.1:6443", Context: "kind-unit"}
}

// freePort is a loopback port free a moment ago: the URL the session
// registers carries its port, so it is chosen before the server binds it.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	p, _ := strconv.Atoi(port)
	return p
}

// syncBuffer is a bytes.Buffer safe to read while the run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// addDynamic stores objs in the dynamic fake as the apiserver holds them.
func addDynamic(t *testing.T, dyn *dynamicfake.FakeDynamicClient, gvr schema.GroupVersionResource, objs ...runtime.Object) {
	t.Helper()
	for _, o := range objs {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
			if err != nil {
				t.Fatal(err)
			}
			u = &unstructured.Unstructured{Object: m}
			gvks, _, err := scheme.Scheme.ObjectKinds(o)
			if err != nil {
				t.Fatal(err)
			}
			u.SetGroupVersionKind(gvks[0])
		}
		if err := dyn.Tracker().Create(gvr, u, u.GetNamespace()); err != nil {
			t.Fatal(err)
		}
	}
}

// waitFor waits up to 10s for cond, polling.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waited 10s for %s", what)
	}
}
