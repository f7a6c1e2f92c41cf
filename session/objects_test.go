package session

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/project"
	"github.com/hookback/hookback/registration"
)

// TestRenderIsWhatStartApplies renders each kind of input with render and
// runs start with the same Options on fake clients: the webhook
// configurations start applied are, object for object, the ones render
// printed (both are Config.Objects).
func TestRenderIsWhatStartApplies(t *testing.T) {
	proj, err := project.Load(filepath.Join("..", "testdata", "project"))
	if err != nil {
		t.Fatal(err)
	}
	yours := func(paths ...string) func(*plan.Options) {
		return func(o *plan.Options) {
			up := httptest.NewServer(http.NotFoundHandler()) // never called: neither render nor start's canary reaches it
			t.Cleanup(up.Close)
			o.User = plan.UserWebhooks{Manifests: paths, Upstreams: []plan.Upstream{{URL: up.URL}}, UpstreamInsecure: true}
		}
	}
	tests := []struct {
		name   string
		change func(*plan.Options)
	}{
		{"the template: built-ins and an extra webhook", func(*plan.Options) {}},
		{"--webhook-config file", yours(filepath.Join("testdata", "user", "webhooks.yaml"))},
		{"--webhook-config directory", yours(filepath.Join("..", "testdata", "manifests", "in"))},
		{"--webhook-config kustomize directory", yours(filepath.Join("..", "testdata", "project", "config", "default"))},
		{"--webhook-config bundle", yours(filepath.Join("..", "testdata", "project", "dist", "install.yaml"))},
		{"project mode", func(o *plan.Options) {
			yours(proj.Manifests...)(o)
			o.Project = proj
		}},
		{"an observer beside your webhook", func(o *plan.Options) {
			yours(filepath.Join("testdata", "user", "webhooks.yaml"))(o)
			watch := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") })
			o.Observers = []plan.Observer{{Webhook: admission.Webhook{Name: "watch", Path: "/observe", Handler: watch},
				Template: []byte(strings.NewReplacer("name: test", "name: observe", "/test", "/observe").Replace(testTemplate))}}
		}},
		{"--chain: the observers beside your webhook", func(o *plan.Options) {
			yours(filepath.Join("..", "testdata", "project", "config", "default"))(o)
			o.Chain = true
		}},
		{"scoped", func(o *plan.Options) {
			yours(filepath.Join("testdata", "user", "webhooks.yaml"))(o)
			o.Scope = registration.Scope{Namespaces: []string{"team-a"}, ObjectSelector: "app=web"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, logs := &syncBuffer{}, &syncBuffer{}
			cfg := startConfig(t, out)
			cfg.Log = slog.New(slog.NewTextHandler(logs, nil))
			defer func() {
				if t.Failed() {
					t.Logf("log:\n%s", logs.String())
				}
			}()
			tt.change(&cfg)
			rendered, err := render(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			want := configurations(t, rendered)
			if len(want) == 0 {
				t.Fatal("render printed no configuration")
			}
			j := &journal{}
			cs, dyn := newFakeClients(t, j)
			callsBack(t, j, cs, dyn)
			establishes(dyn)
			stop := startUntilReady(t, cfg, &kubeconfig.Cluster{Config: localConfig(), Client: cs, Watch: cs, Dynamic: dyn}, out)
			defer func() {
				if err := stop(); err != nil {
					t.Errorf("run = %v, want a clean stop", err)
				}
			}()
			got := map[string]any{}
			for _, gvr := range []schema.GroupVersionResource{mutatingGVR, validatingGVR} {
				list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Items {
					got[o.GetKind()+"/"+o.GetName()] = comparable(&o)
				}
			}
			// An observer's configuration reaches its served path.
			observed := 0
			for _, gvr := range []schema.GroupVersionResource{mutatingGVR, validatingGVR} {
				list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for i := range list.Items {
					if o := &list.Items[i]; strings.HasPrefix(o.GetName(), "observe-") {
						observed++
						if err := callWebhook(o, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "observed", Namespace: "default"}}); err != nil {
							t.Errorf("the apiserver's call of %s: %v", o.GetName(), err)
						}
					}
				}
			}
			if observed != len(cfg.Observers) {
				t.Errorf("%d observer configurations registered, want %d", observed, len(cfg.Observers))
			}
			if chained := chainObservers(got); cfg.Chain && chained != 3 || !cfg.Chain && chained != 0 {
				t.Errorf("%d chain observer configurations registered with --chain %v", chained, cfg.Chain)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("start applied\n%v\nrender printed\n%v", keys(got), keys(want))
				for k, w := range want {
					if !reflect.DeepEqual(got[k], w) {
						t.Errorf("%s: start applied\n%v\nrender printed\n%v", k, got[k], w)
					}
				}
			}
		})
	}
}

// chainObservers counts start --chain's observer configurations among
// objs, by the names docs/chain.md gives them.
func chainObservers(objs map[string]any) int {
	n := 0
	for k := range objs {
		if strings.Contains(k, "hookback-chain-") {
			n++
		}
	}
	return n
}

// configurations are the objects of a rendered YAML stream, by kind/name.
func configurations(t *testing.T, b []byte) map[string]any {
	t.Helper()
	out := map[string]any{}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		o := &unstructured.Unstructured{}
		if err := dec.Decode(&o.Object); err != nil {
			break
		}
		if len(o.Object) > 0 {
			out[o.GetKind()+"/"+o.GetName()] = comparable(o)
		}
	}
	return out
}

// comparable is what a configuration says: its labels, annotations and
// webhooks, without what the apiserver (or its fake) adds, as JSON values
// (a number read from YAML and one stored by the fake are then alike).
func comparable(o *unstructured.Unstructured) any {
	b, err := json.Marshal(map[string]any{"labels": o.GetLabels(), "annotations": o.GetAnnotations(), "webhooks": o.Object["webhooks"]})
	if err != nil {
		return err.Error()
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return err.Error()
	}
	return out
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// establishes makes the fake apiserver report every CRD it stores as
// Established, as the apiserver does once it serves the CRD's resources.
func establishes(dyn *dynamicfake.FakeDynamicClient) {
	dyn.PrependReactor("get", "customresourcedefinitions", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		o, err := dyn.Tracker().Get(g.GetResource(), g.GetNamespace(), g.GetName())
		if err != nil {
			return true, nil, err
		}
		u := o.(*unstructured.Unstructured).DeepCopy()
		cond := map[string]any{"type": "Established", "status": "True"}
		if err := unstructured.SetNestedSlice(u.Object, []any{cond}, "status", "conditions"); err != nil {
			return true, nil, err
		}
		return true, u, nil
	})
}
