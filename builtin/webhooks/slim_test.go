package webhooks

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/randfill"

	"github.com/hookback/hookback/builtin/controllers"
)

// TestEvictionReadsOnlyWhatTheCacheKeeps runs pod-eviction against random
// cached pods and against their slim copies, as the shared informer keeps
// them (controller.SlimPod): the Events and log lines must be the same, or
// the handler reads a field the cache drops.
func TestEvictionReadsOnlyWhatTheCacheKeeps(t *testing.T) {
	f := randfill.NewWithSeed(3).NilChance(0.2).NumElements(0, 3).MaxDepth(6)
	times := regexp.MustCompile(`"time":"[^"]*"`)
	run := func(p *corev1.Pod) (string, []string) {
		var logs bytes.Buffer
		deps, rec, _ := testDeps(p)
		deps.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		h := buildOne(t, NamePodEviction, DefaultOptions(), deps)
		h.Handle(context.Background(), loadRequest(t, NamePodEviction, "v1-policy-v1"))
		return times.ReplaceAllString(logs.String(), ""), drain(rec)
	}
	sawNode := false
	for range 300 {
		p := &corev1.Pod{}
		f.Fill(p)
		p.Namespace, p.Name = cachedPod().Namespace, cachedPod().Name // the fixture's
		fullLog, fullEvents := run(p)
		slimLog, slimEvents := run(controllers.SlimPod(p))
		if fullLog != slimLog || !slices.Equal(fullEvents, slimEvents) {
			t.Fatalf("pod-eviction reads a field the cache drops:\nfull: %s %q\nslim: %s %q", fullLog, fullEvents, slimLog, slimEvents)
		}
		sawNode = sawNode || p.Spec.NodeName != ""
	}
	if !sawNode {
		t.Fatal("no random pod had a node: the test proves nothing")
	}
}

// TestEvictionWaitsForTheFirstList: hookback registers before the pod
// cache's first list; an eviction arriving meanwhile waits for it within
// its deadline, and is allowed without an Event when the deadline comes
// first.
func TestEvictionWaitsForTheFirstList(t *testing.T) {
	for _, tc := range []struct {
		name       string
		syncAfter  time.Duration
		deadline   time.Duration
		wantEvents int
		wantLog    string
	}{
		{name: "list done within the deadline", syncAfter: 50 * time.Millisecond, deadline: 5 * time.Second, wantEvents: 1, wantLog: "eviction requested"},
		{name: "deadline first", syncAfter: time.Hour, deadline: 50 * time.Millisecond, wantLog: "pod cache still loading"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			deps, rec, _ := testDeps(cachedPod())
			deps.Log = slog.New(slog.NewJSONHandler(&logs, nil))
			ready := time.Now().Add(tc.syncAfter)
			deps.PodsSynced = func() bool { return time.Now().After(ready) }
			h := buildOne(t, NamePodEviction, DefaultOptions(), deps)
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			checkDecision(t, h.Handle(ctx, loadRequest(t, NamePodEviction, "v1-policy-v1")), true, 200, "")
			if got := drain(rec); len(got) != tc.wantEvents {
				t.Errorf("events %q, want %d", got, tc.wantEvents)
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log lacks %q: %s", tc.wantLog, logs.String())
			}
		})
	}
}
