package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
)

// failingController fails once started, as a controller whose watch was
// refused does.
type failingController struct{ j *journal }

func (c failingController) Name() string { return "failing" }
func (c failingController) Run(context.Context, int) error {
	c.j.add("controller failed")
	return errors.New("watch refused")
}

var _ controllers.Controller = failingController{}

// runHandle is a run started by startRun: wait returns what it returned
// once it ends by itself, stop cancels it first.
type runHandle struct {
	cancel context.CancelFunc
	done   chan error
}

func (h runHandle) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the run did not end within 20s")
		return nil
	}
}

func (h runHandle) stop(t *testing.T) error {
	h.cancel()
	return h.wait(t)
}

func startRun(t *testing.T, r *run) runHandle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := runHandle{cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- r.run(ctx, time.Now()) }()
	return h
}

// TestRunEnds: how a run ends decides what it undoes. A failed part stops
// it "unexpectedly" and it deregisters; a Lease taken over by another run
// stops it without touching what is now that run's; --no-verify runs on
// unverified and a cancel is a clean stop.
func TestRunEnds(t *testing.T) {
	tests := []struct {
		name string
		// setup changes the run before it starts.
		setup func(r *run, j *journal, cs *fake.Clientset)
		// then happens once the run is ready; nil: the run ends by itself.
		then func(t *testing.T, r *run, cs *fake.Clientset)
		// unreachable: the apiserver never calls the canary.
		unreachable bool
		wantErr     func(error) bool
		banner      string
		did         []string
		didNot      []string
	}{{
		name: "a controller fails: stopped unexpectedly, deregistered",
		setup: func(r *run, j *journal, _ *fake.Clientset) {
			r.parts.Controllers = []controllers.Controller{failingController{j}}
		},
		wantErr: func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "stopped unexpectedly") && strings.Contains(err.Error(), "watch refused")
		},
		did: []string{"controller failed", "delete test-unit", "delete lease"},
	}, {
		name:  "the Lease is taken over: stops, leaves the configurations and the Lease to the other run",
		setup: func(r *run, _ *journal, _ *fake.Clientset) { r.cfg.LeaseDuration = 600 * time.Millisecond },
		then: func(t *testing.T, r *run, cs *fake.Clientset) {
			leases := cs.CoordinationV1().Leases("default")
			l, err := leases.Get(context.Background(), "hookback-unit", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l.Spec.HolderIdentity = ptr.To("another-host/42")
			l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
			if _, err := leases.Update(context.Background(), l, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		wantErr: func(err error) bool { return errors.Is(err, registration.ErrSessionTakenOver) },
		banner:  "verified: the apiserver called back",
		didNot:  []string{"delete test-unit", "delete lease"},
	}, {
		name:        "--no-verify: runs unverified, then a clean stop",
		setup:       func(r *run, _ *journal, _ *fake.Clientset) { r.cfg.NoVerify = true },
		unreachable: true,
		then:        func(*testing.T, *run, *fake.Clientset) {},
		wantErr:     func(err error) bool { return err == nil },
		banner:      "NOT verified (--no-verify)",
		did:         []string{"delete test-unit", "delete lease"},
		didNot:      []string{"canary called"},
	}, {
		name:  "regained: applies again and verifies again, then a clean stop",
		setup: func(*run, *journal, *fake.Clientset) {},
		then: func(t *testing.T, r *run, _ *fake.Clientset) {
			j := r.parts.Controllers[0].(fakeController).j
			r.reverifyLater("the test said so")
			waitFor(t, "a second canary call", func() bool { return count(j.all(), "canary called") == 2 })
		},
		wantErr: func(err error) bool { return err == nil },
		banner:  "verified: the apiserver called back",
		did:     []string{"delete test-unit", "delete lease"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, j, cs := newTestRun(t, testTemplate)
			if !tt.unreachable {
				callsBack(t, j, cs, r.cluster.Dynamic.(*dynamicfake.FakeDynamicClient))
			}
			out := &syncBuffer{}
			r.cfg.Out = out
			tt.setup(r, j, cs)
			h := startRun(t, r)
			var err error
			if tt.then == nil {
				err = h.wait(t)
			} else {
				waitFor(t, "the ready banner", func() bool { return strings.Contains(out.String(), "Stop with Ctrl-C") })
				tt.then(t, r, cs)
				if tt.wantErr(nil) {
					err = h.stop(t)
				} else {
					err = h.wait(t)
				}
			}
			if !tt.wantErr(err) {
				t.Fatalf("run = %v", err)
			}
			if !strings.Contains(out.String(), tt.banner) {
				t.Errorf("the banner does not say %q:\n%s", tt.banner, out.String())
			}
			for _, s := range tt.did {
				if j.index(s) < 0 {
					t.Errorf("did not %q: %q", s, j.all())
				}
			}
			for _, s := range tt.didNot {
				if j.index(s) >= 0 {
					t.Errorf("did %q: %q", s, j.all())
				}
			}
		})
	}
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

// TestRunReappliesAChangedTemplate: a template file edited while the
// session runs is applied again, and the cluster holds the new one.
func TestRunReappliesAChangedTemplate(t *testing.T) {
	r, j, cs := newTestRun(t, testTemplate)
	callsBack(t, j, cs, r.cluster.Dynamic.(*dynamicfake.FakeDynamicClient))
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(testTemplate), 0o600); err != nil {
		t.Fatal(err)
	}
	r.cfg.Template = registration.Template{Path: path}
	r.cfg.ReloadInterval = 50 * time.Millisecond
	out := &syncBuffer{}
	r.cfg.Out = out
	r.config = new(plan.Config).With(func(o *plan.Options) { *o = r.cfg }) // the run's plan.Config, with the template file
	h := startRun(t, r)
	waitFor(t, "the ready banner", func() bool { return strings.Contains(out.String(), "Stop with Ctrl-C") })
	changed := strings.Replace(testTemplate, "failurePolicy: Ignore", "failurePolicy: Fail", 1)
	if err := os.WriteFile(path, []byte(changed), 0o600); err != nil {
		t.Fatal(err)
	}
	dyn := r.cluster.Dynamic.(*dynamicfake.FakeDynamicClient)
	waitFor(t, "the changed template applied", func() bool {
		o, err := dyn.Tracker().Get(validatingGVR, "", "test-unit")
		if err != nil {
			return false
		}
		hooks, _, _ := unstructured.NestedSlice(o.(*unstructured.Unstructured).Object, "webhooks")
		return len(hooks) == 1 && hooks[0].(map[string]any)["failurePolicy"] == "Fail"
	})
	if err := h.stop(t); err != nil {
		t.Fatalf("run = %v, want a clean stop", err)
	}
	if n := count(j.all(), "apply test-unit"); n < 2 {
		t.Errorf("applied %d times, want again after the change: %q", n, j.all())
	}
}
