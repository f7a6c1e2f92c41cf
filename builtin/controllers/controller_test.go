package controllers

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
)

// testLog sends the controllers' logs to the test log, so a failure shows
// what the controller did.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

type podOpt func(*corev1.Pod)

func newPod(ns, name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func annotated(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func labelled(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

// indexerWith returns a cache indexer holding objs, to back a lister without
// running an informer.
func indexerWith(t *testing.T, objs ...runtime.Object) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// writes returns the fake client's write actions (not get, list or watch).
func writes(cs *fake.Clientset) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range cs.Actions() {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			out = append(out, a)
		}
	}
	return out
}

// drainEvents returns the Events recorded so far.
func drainEvents(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// runController builds the named controller over a real informer factory on
// cs, starts everything and stops it at the end of the test, checking that
// Run returned.
func runController(t *testing.T, name string, cs *fake.Clientset, deps Deps) {
	t.Helper()
	factory := NewInformerFactory(cs, 0)
	deps.Client, deps.Factory = cs, factory
	if deps.Log == nil {
		deps.Log = testLog(t)
	}
	ctrls, err := Build([]string{name}, deps)
	if err != nil || len(ctrls) != 1 {
		t.Fatalf("Build(%s) = %v, %v", name, ctrls, err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ctrls[0].Run(ctx, 2) }()
	factory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after cancel")
		}
		factory.Shutdown()
	})
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestBuildSelection(t *testing.T) {
	cs := fake.NewClientset()
	deps := Deps{Client: cs, Factory: NewInformerFactory(cs, 0)}
	tests := []struct {
		name     string
		selected []string
		want     []string
		err      string
	}{
		// Names arrive resolved (session.Select): empty is none, and "all"
		// or "none" are not names.
		{name: "empty builds none", selected: nil, want: nil},
		{name: "every name", selected: Names(), want: []string{PodNameLabelName, ExecRBACName}},
		{name: "one", selected: []string{"exec-rbac"}, want: []string{ExecRBACName}},
		{name: "Names order", selected: []string{"exec-rbac", "pod-name-label"}, want: []string{PodNameLabelName, ExecRBACName}},
		{name: "duplicates", selected: []string{"exec-rbac", "exec-rbac"}, want: []string{ExecRBACName}},
		{name: "unknown lists valid names", selected: []string{"pod-name-label", "nope"}, err: `unknown controller "nope": valid controllers are pod-name-label, exec-rbac`},
		{name: "all is not a name", selected: []string{"all"}, err: `unknown controller "all"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Build(tt.selected, deps)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range got {
				names = append(names, c.Name())
			}
			if strings.Join(names, ",") != strings.Join(tt.want, ",") {
				t.Errorf("names = %v, want %v", names, tt.want)
			}
		})
	}
	t.Run("missing client", func(t *testing.T) {
		if _, err := Build(Names(), Deps{}); err == nil {
			t.Error("want an error")
		}
	})
}

func TestNames(t *testing.T) {
	if got := strings.Join(Names(), ","); got != "pod-name-label,exec-rbac" {
		t.Errorf("Names() = %s", got)
	}
}

// The workqueue metrics land in the given registry, per controller, and a
// second Build with the same registry reuses them. Waiting for a finished
// item (work duration) rather than an add also waits for Run to be past its
// cache sync.
func TestWorkqueueMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	cs := fake.NewClientset(newPod("a", "p", annotated(AddPodNameLabelAnnotation, "true")))
	if _, err := Build(nil, Deps{Client: cs, Factory: NewInformerFactory(cs, 0), Metrics: reg}); err != nil {
		t.Fatalf("first Build: %v", err)
	}
	runController(t, PodNameLabelName, cs, Deps{Metrics: reg})
	eventually(t, "a processed item", func(context.Context) (bool, error) {
		mfs, err := reg.Gather()
		if err != nil {
			return false, err
		}
		for _, mf := range mfs {
			if mf.GetName() != "workqueue_work_duration_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "name" && l.GetValue() == PodNameLabelName && m.GetHistogram().GetSampleCount() > 0 {
						return true, nil
					}
				}
			}
		}
		return false, nil
	})
}

func TestRunReturnsErrorWhenCachesNeverSync(t *testing.T) {
	cs := fake.NewClientset()
	ctrls, err := Build([]string{PodNameLabelName}, Deps{Client: cs, Factory: NewInformerFactory(cs, 0)})
	if err != nil {
		t.Fatal(err)
	}
	// The factory is never started: Run must still return when ctx ends.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := ctrls[0].Run(ctx, 1); err == nil || !strings.Contains(err.Error(), "caches not synced") {
		t.Errorf("Run = %v, want a caches-not-synced error", err)
	}
}

func TestPermissions(t *testing.T) {
	perms, err := Permissions(Names())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range perms {
		got = append(got, p.String())
	}
	want := []string{
		"list pods", "watch pods", "patch pods", "get pods",
		"get clusterroles.rbac.authorization.k8s.io xxl-agent-exec", "list clusterroles.rbac.authorization.k8s.io xxl-agent-exec",
		"watch clusterroles.rbac.authorization.k8s.io xxl-agent-exec", "update clusterroles.rbac.authorization.k8s.io xxl-agent-exec",
		"delete clusterroles.rbac.authorization.k8s.io xxl-agent-exec",
		"create clusterroles.rbac.authorization.k8s.io",
		"get rolebindings.rbac.authorization.k8s.io xxl-agent-exec", "list rolebindings.rbac.authorization.k8s.io xxl-agent-exec",
		"watch rolebindings.rbac.authorization.k8s.io xxl-agent-exec", "update rolebindings.rbac.authorization.k8s.io xxl-agent-exec",
		"delete rolebindings.rbac.authorization.k8s.io xxl-agent-exec",
		"create rolebindings.rbac.authorization.k8s.io",
		// Only the binding older versions made, to delete it.
		"get clusterrolebindings.rbac.authorization.k8s.io xxl-agent-exec", "delete clusterrolebindings.rbac.authorization.k8s.io xxl-agent-exec",
		"create pods/exec", "get pods/exec",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Permissions(all) =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if perms, err := Permissions(nil); err != nil || len(perms) != 0 {
		t.Errorf("Permissions(none) = %v, %v", perms, err)
	}
	if _, err := Permissions([]string{"bogus"}); err == nil {
		t.Error("Permissions(bogus): want an error")
	}
}
