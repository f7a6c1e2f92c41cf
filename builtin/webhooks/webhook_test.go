package webhooks

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

func TestNames(t *testing.T) {
	want := []string{"pod-name", "pod-lifespan", "pod-sidecar", "pod-eviction", "node-status"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name      string
		enabled   []string
		deps      func(Deps) Deps
		opts      func(Options) Options
		want      []string // names, in order
		wantPaths []string
		wantErr   string
	}{
		// Names arrive resolved (session.Select): "all" is not a name.
		{name: "every name", enabled: Names(), want: Names(),
			wantPaths: []string{"/validate-pod-name", "/mutate-pod-lifespan", "/mutate-pod-sidecar", "/validate-pod-eviction", "/mutate-node-status"}},
		{name: "all is not a name", enabled: []string{"all"}, wantErr: `unknown webhook "all"`},
		{name: "subset in stable order, deduplicated", enabled: []string{"node-status", "pod-name", "pod-name"},
			want: []string{"pod-name", "node-status"}, wantPaths: []string{"/validate-pod-name", "/mutate-node-status"}},
		{name: "none", enabled: nil, want: nil},
		{name: "unknown", enabled: []string{"pod-name", "pod-nmae"},
			wantErr: `unknown webhook "pod-nmae": valid webhooks are pod-name, pod-lifespan, pod-sidecar, pod-eviction, node-status`},
		{name: "no recorder for a webhook that records", enabled: []string{"pod-sidecar"},
			deps: func(d Deps) Deps { d.Recorder = nil; return d }, wantErr: "webhook pod-sidecar records events but no events recorder was provided"},
		{name: "recorder returns nil", enabled: []string{"pod-lifespan"},
			deps:    func(d Deps) Deps { d.Recorder = func(string) events.EventRecorder { return nil }; return d },
			wantErr: "webhook pod-lifespan: the events recorder factory returned nil"},
		{name: "no pod lister for eviction", enabled: []string{"pod-eviction"},
			deps: func(d Deps) Deps { d.Pods = nil; return d }, wantErr: "webhook pod-eviction reads pods from an informer cache but no pod lister was provided"},
		{name: "webhooks without events need no deps", enabled: []string{"pod-name", "node-status"},
			deps: func(Deps) Deps { return Deps{} }, want: []string{"pod-name", "node-status"}},
		{name: "invalid options", enabled: []string{"pod-name"},
			opts: func(o Options) Options { o.CPUOversellFactor = 0.5; return o }, wantErr: "webhook options: cpu oversell factor 0.5: want a finite number >= 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deps, _, asked := testDeps()
			if tt.deps != nil {
				deps = tt.deps(deps)
			}
			opts := DefaultOptions()
			if tt.opts != nil {
				opts = tt.opts(opts)
			}
			hooks, err := Build(tt.enabled, opts, deps)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			checkBuilt(t, hooks, tt.want, tt.wantPaths, *asked)
		})
	}
}

// checkBuilt asserts the webhooks' names and paths, and that each recording
// webhook asked for a recorder named after itself.
func checkBuilt(t *testing.T, hooks []admission.Webhook, want, wantPaths, asked []string) {
	t.Helper()
	var names, paths []string
	for _, h := range hooks {
		if h.Handler == nil {
			t.Errorf("webhook %s has no handler", h.Name)
		}
		names, paths = append(names, h.Name), append(paths, h.Path)
	}
	if !slices.Equal(names, want) {
		t.Errorf("names = %q, want %q", names, want)
	}
	if wantPaths != nil && !slices.Equal(paths, wantPaths) {
		t.Errorf("paths = %q, want %q", paths, wantPaths)
	}
	// Each recording webhook gets a recorder named after itself.
	for _, n := range asked {
		if !slices.Contains([]string{NamePodLifespan, NamePodSidecar, NamePodEviction}, n) || !slices.Contains(names, n) {
			t.Errorf("recorder asked for %q", n)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr []string
	}{
		{name: "defaults", mutate: func(*Options) {}},
		{name: "factor 1", mutate: func(o *Options) { o.CPUOversellFactor = 1 }},
		{name: "no banned words", mutate: func(o *Options) { o.BannedWords = nil }},
		{name: "factor below 1", mutate: func(o *Options) { o.CPUOversellFactor = 0.99 }, wantErr: []string{"cpu oversell factor 0.99"}},
		{name: "factor NaN", mutate: func(o *Options) { o.CPUOversellFactor = math.NaN() }, wantErr: []string{"cpu oversell factor NaN"}},
		{name: "factor infinite", mutate: func(o *Options) { o.CPUOversellFactor = math.Inf(1) }, wantErr: []string{"cpu oversell factor +Inf"}},
		{name: "empty image", mutate: func(o *Options) { o.SidecarImage = " " }, wantErr: []string{`sidecar image " ": want an image reference`}},
		{name: "image with spaces", mutate: func(o *Options) { o.SidecarImage = "busy box" }, wantErr: []string{`sidecar image "busy box": want an image reference without whitespace`}},
		{name: "empty banned word", mutate: func(o *Options) { o.BannedWords = []string{"bad", " "} }, wantErr: []string{`banned words entry 2 " ": want a non-empty word`}},
		{name: "every problem at once", mutate: func(o *Options) { *o = Options{BannedWords: []string{""}} },
			wantErr: []string{`banned words entry 1 ""`, `sidecar image ""`, "cpu oversell factor 0:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := DefaultOptions()
			tt.mutate(&o)
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

func TestDefaultOptionsIsACopy(t *testing.T) {
	o := DefaultOptions()
	o.BannedWords[0] = "changed"
	if DefaultBannedWords[0] != "offensive" {
		t.Error("DefaultOptions shares DefaultBannedWords")
	}
}

// Every webhook has fixtures in both review versions, and every fixture is a
// well-formed review whose name says its version.
func TestFixturesCoverBothVersions(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			files, err := filepath.Glob(filepath.Join(fixtureDir, name, "*.json"))
			if err != nil || len(files) == 0 {
				t.Fatalf("no fixtures for %s: %v", name, err)
			}
			seen := map[string]bool{}
			for _, f := range files {
				fixture := strings.TrimSuffix(filepath.Base(f), ".json")
				loadRequest(t, name, fixture)
				seen[strings.SplitN(fixture, "-", 2)[0]] = true
			}
			if !seen["v1"] || !seen["v1beta1"] {
				t.Errorf("fixtures for %s cover %v, want v1 and v1beta1", name, seen)
			}
		})
	}
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !slices.Contains(Names(), e.Name()) {
			t.Errorf("fixture directory %s belongs to no webhook", e.Name())
		}
	}
}

// captured is one Eventf call with the recorder's reporting controller.
type captured struct {
	controller, eventtype, reason, action string
	regarding                             corev1.ObjectReference
}

type captureRecorder struct {
	controller string
	got        *[]captured
}

func (c captureRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, action, _ string, _ ...any) {
	*c.got = append(*c.got, captured{controller: c.controller, eventtype: eventtype, reason: reason, action: action,
		regarding: *regarding.(*corev1.ObjectReference)})
}

// Events are recorded by the webhook's own recorder, against the owner,
// else the pod, else the namespace.
func TestEventTargets(t *testing.T) {
	rsRef := func(name string) corev1.ObjectReference {
		return corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name, Namespace: "demo", UID: "9b1f6a2e-1d8c-4f7a-b3e4-2c5d6e7f8a90"}
	}
	tests := []struct {
		webhook, fixture string
		want             captured
	}{
		{NamePodLifespan, "v1-create-invalid", captured{"pod-lifespan", "Warning", "LifespanInvalid", "AddTolerations", rsRef("batch-5f6d")}},
		{NamePodLifespan, "v1beta1-create-invalid", captured{"pod-lifespan", "Warning", "LifespanInvalid", "AddTolerations",
			corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: "two-days", Namespace: "demo"}}},
		{NamePodSidecar, "v1-target-missing", captured{"pod-sidecar", "Warning", "SidecarSkipped", "InjectSidecar", rsRef("jobs-6b7c8")}},
		// generateName and no owner: no name yet, so the namespace.
		{NamePodSidecar, "v1beta1-missing-annotations", captured{"pod-sidecar", "Warning", "SidecarSkipped", "InjectSidecar",
			corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "demo", Namespace: "demo"}}},
		{NamePodEviction, "v1-policy-v1", captured{"pod-eviction", "Normal", "Evicting", "Evict",
			corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web-7d9f8-abcde", Namespace: "demo", UID: cachedPod().UID}}},
	}
	for _, tt := range tests {
		t.Run(tt.webhook+"/"+tt.fixture, func(t *testing.T) {
			var got []captured
			deps := Deps{Pods: podLister(cachedPod()), Recorder: func(name string) events.EventRecorder {
				return captureRecorder{controller: name, got: &got}
			}}
			h := buildOne(t, tt.webhook, DefaultOptions(), deps)
			h.Handle(context.Background(), loadRequest(t, tt.webhook, tt.fixture))
			if len(got) != 1 || got[0] != tt.want {
				t.Errorf("events = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPodEventTargetNamespaceFallback(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "x-"}}
	if got := podEventTarget(pod, "req-ns"); got.Kind != "Namespace" || got.Name != "req-ns" || got.Namespace != "req-ns" {
		t.Errorf("target = %+v", got)
	}
	pod.Name = "x-1"
	if got := podEventTarget(pod, "req-ns"); got.Kind != "Pod" || got.Name != "x-1" || got.Namespace != "req-ns" {
		t.Errorf("target = %+v", got)
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijkl", 10, "abcdefg..."},
		{"ééééééé", 10, "ééé..."}, // never splits a rune
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := truncate(tt.in, tt.n); got != tt.want || len(got) > tt.n {
				t.Errorf("truncate(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
	long := strings.Repeat("x", 5000)
	if got := short(long); len(got) > 70 {
		t.Errorf("short() kept %d bytes", len(got))
	}
}
