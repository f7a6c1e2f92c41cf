package incluster

import (
	"context"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/hookback/hookback/registration"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestExcludeNamespace(t *testing.T) {
	notIn := func(vals ...any) map[string]any {
		return map[string]any{"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": vals}
	}
	other := map[string]any{"key": "team", "operator": "Exists"}
	tests := []struct {
		name     string
		selector any // nil: none
		want     map[string]any
	}{
		{"no selector", nil, map[string]any{"matchExpressions": []any{notIn("hb")}}},
		{"NotIn grows", map[string]any{"matchExpressions": []any{notIn("kube-system")}},
			map[string]any{"matchExpressions": []any{notIn("kube-system", "hb")}}},
		{"other expressions kept", map[string]any{"matchExpressions": []any{other}},
			map[string]any{"matchExpressions": []any{other, notIn("hb")}}},
		{"labels kept", map[string]any{"matchLabels": map[string]any{"env": "dev"}},
			map[string]any{"matchLabels": map[string]any{"env": "dev"}, "matchExpressions": []any{notIn("hb")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hook := map[string]any{"name": "a.example.com"}
			if tt.selector != nil {
				hook["namespaceSelector"] = tt.selector
			}
			o := &unstructured.Unstructured{Object: map[string]any{"kind": "ValidatingWebhookConfiguration", "webhooks": []any{hook}}}
			if err := excludeNamespace(o, "hb"); err != nil {
				t.Fatal(err)
			}
			got, _, _ := unstructured.NestedMap(o.Object["webhooks"].([]any)[0].(map[string]any), "namespaceSelector")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("namespaceSelector = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestConfigurations checks what serve applies: the template's webhooks,
// each referencing the Service, with the caBundle set on every one.
func TestConfigurations(t *testing.T) {
	objs, err := configurations(ServeConfig{Namespace: "hb", Webhooks: []string{"pod-name", "pod-lifespan"}, Template: template(t)})
	if err != nil {
		t.Fatal(err)
	}
	hooks := 0
	for _, o := range objs {
		if err := setCABundle(o, "Q0E="); err != nil {
			t.Fatal(err)
		}
		list, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		for _, h := range list {
			hooks++
			cc := h.(map[string]any)["clientConfig"].(map[string]any)
			svc, _ := cc["service"].(map[string]any)
			if svc["namespace"] != "hb" || svc["name"] != Name || svc["port"] != int64(ServicePort) || cc["url"] != nil {
				t.Errorf("%s: clientConfig %v, want service hb/%s:%d", o.GetName(), cc, Name, ServicePort)
			}
			if cc["caBundle"] != "Q0E=" {
				t.Errorf("%s: caBundle %v", o.GetName(), cc["caBundle"])
			}
		}
	}
	if hooks != 2 {
		t.Errorf("%d webhooks, want pod-name's and pod-lifespan's", hooks)
	}
}

// TestLeaderHandsOver runs two replicas' elections on one fake clientset:
// exactly one leads at a time, and stopping it hands the controllers over.
func TestLeaderHandsOver(t *testing.T) {
	cs := fake.NewClientset()
	var mu sync.Mutex
	running := map[string]int{}
	var early []string // controllers that found the Lease released while they still ran
	newReplica := func(id string) *leader {
		ctl := func(ctx context.Context) error {
			mu.Lock()
			running[id]++
			mu.Unlock()
			<-ctx.Done()
			// A controller stopping may still be writing: the Lease must
			// still be this replica's (ReleaseOnCancel only after).
			if l, err := cs.CoordinationV1().Leases("hb").Get(context.Background(), LeaseName, metav1.GetOptions{}); err != nil ||
				l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != id {
				mu.Lock()
				early = append(early, id)
				mu.Unlock()
			}
			mu.Lock()
			running[id]--
			mu.Unlock()
			return nil
		}
		l, err := newLeader(cs, ServeConfig{Namespace: "hb", Identity: id, LeaseDuration: 2 * time.Second, // the Lease records whole seconds
			Controllers: []string{"exec-rbac"}, Log: slog.New(slog.DiscardHandler)}, []func(context.Context) error{ctl}, prometheus.NewRegistry(), nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	a, b := newReplica("a"), newReplica("b")
	ctxA, stopA := context.WithCancel(context.Background())
	ctxB, stopB := context.WithCancel(context.Background())
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	// The leader announces itself to laptop sessions with a session Lease
	// naming its parts, its own while it leads, gone when no one leads.
	presence := func() string {
		l, err := cs.CoordinationV1().Leases("hb").Get(context.Background(), registration.LeaseName(PresenceSession), metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return ptr.Deref(l.Spec.HolderIdentity, "") + " " + l.Annotations[registration.AnnotationParts]
	}
	go func() { doneA <- a.Run(ctxA) }()
	waitFor(t, "a leading", func() bool { return a.leading.Load() })
	waitFor(t, "a's presence Lease", func() bool { return presence() == "a exec-rbac" })
	go func() { doneB <- b.Run(ctxB) }()
	// b campaigns for a few retry periods while a holds the Lease.
	time.Sleep(time.Second)
	mu.Lock()
	if running["a"] != 1 || running["b"] != 0 || b.leading.Load() {
		t.Errorf("while a leads: running %v, b leading %v", running, b.leading.Load())
	}
	mu.Unlock()
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if running["a"] != 0 {
		t.Errorf("a's controllers still running after its Run returned: %v", running)
	}
	mu.Unlock()
	waitFor(t, "b leading after a released the Lease", func() bool { return b.leading.Load() })
	waitFor(t, "b's presence Lease", func() bool { return presence() == "b exec-rbac" })
	stopB()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	if p := presence(); p != "" {
		t.Errorf("presence Lease %q left after the last leader stopped", p)
	}
	if running["b"] != 0 {
		t.Errorf("b's controllers still running: %v", running)
	}
	if len(early) > 0 {
		t.Errorf("the Lease was released while the controllers of %v still ran", early)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
