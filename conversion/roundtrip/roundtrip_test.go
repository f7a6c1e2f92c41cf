package roundtrip

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/internal/jsondiff"
)

func TestRunFindsWhatASpokeDrops(t *testing.T) {
	tests := []struct {
		name      string
		server    *gadgetServer
		wantPaths []string // from->via path
	}{
		{name: "lossless", server: &gadgetServer{}},
		{name: "v2 drops spec.color", server: &gadgetServer{dropColor: true},
			wantPaths: []string{"v1->v2 spec.color", "v2->v1 spec.color"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conv, crd := gadgets(t, tc.server)
			rep, err := Run(context.Background(), Options{CRD: crd, Converter: conv, N: 40, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Objects != 80 || rep.RoundTrips != 80 || rep.Denied != 0 {
				t.Errorf("%d objects, %d round trips, %d denied: want 80, 80, 0", rep.Objects, rep.RoundTrips, rep.Denied)
			}
			// Each round trip is two reviews: proof the webhook was called.
			if got := tc.server.reviews.Load(); got < 160 {
				t.Errorf("the webhook answered %d reviews, want at least 160", got)
			}
			var got []string
			for _, l := range rep.Losses {
				got = append(got, l.From+"->"+l.Via+" "+l.Path)
				if l.Count < 1 || !strings.HasPrefix(l.Before, `"`) || l.After != jsondiff.Missing {
					t.Errorf("loss %+v: want a color before and %s after", l, jsondiff.Missing)
				}
			}
			if !slices.Equal(got, tc.wantPaths) || len(rep.Failures) != 0 {
				t.Errorf("losses %v, failures %+v: want %v and none", got, rep.Failures, tc.wantPaths)
			}
			if rep.Clean() != (len(tc.wantPaths) == 0) || rep.Kept+sumCounts(rep) < rep.RoundTrips {
				t.Errorf("report %+v is inconsistent", rep)
			}
		})
	}
}

func sumCounts(rep Report) int {
	n := 0
	for _, l := range rep.Losses {
		n += l.Count
	}
	return n
}

func TestRunIsReproducibleFromItsSeed(t *testing.T) {
	run := func(seed uint64) string {
		conv, crd := gadgets(t, &gadgetServer{dropColor: true})
		rep, err := Run(context.Background(), Options{CRD: crd, Converter: conv, N: 15, Seed: seed, Concurrency: 3})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(rep)
		return string(b)
	}
	if a, b := run(42), run(42); a != b {
		t.Errorf("seed 42 twice gave different reports:\n%s\n%s", a, b)
	}
	if a, b := run(42), run(43); a == b {
		t.Errorf("seeds 42 and 43 gave the same report: the seed is not used")
	}
}

func TestRunVariesTheSeedObjects(t *testing.T) {
	conv, crd := gadgets(t, &gadgetServer{})
	seeds, err := ReadObjects("testdata/sample.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRunner(Options{CRD: crd, Converter: conv, N: 30, Seed: 1, Seeds: seeds})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := r.objects(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	kept, varied := 0, 0
	for _, m := range objs {
		meta, _ := m.obj["metadata"].(map[string]any)
		labels, _ := meta["labels"].(map[string]any)
		if labels["app"] != "demo" {
			t.Errorf("%s %v: want the sample's labels kept", m.version, meta)
		}
		spec, _ := m.obj["spec"].(map[string]any)
		if spec["schedule"] == "*/5 * * * *" {
			kept++
		}
		if !equalJSON(spec, objs[0].obj["spec"]) {
			varied++
		}
	}
	// v2's seeds are the sample converted (count for size).
	if spec, _ := objs[30].obj["spec"].(map[string]any); objs[30].version != "v2" || spec["count"] == nil {
		t.Errorf("first v2 object %v: want the sample converted to v2", objs[30].obj)
	}
	if kept < 10 || varied < 20 {
		t.Errorf("%d of 60 objects keep the sample's schedule, %d differ from it: want variations of the sample", kept, varied)
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestRunSkipsWhatTheValidatingWebhookDenies(t *testing.T) {
	conv, crd := gadgets(t, &gadgetServer{dropColor: true})
	asked, denied := 0, 0
	admit := func(_ context.Context, version string, obj map[string]any) (bool, string, error) {
		spec, _ := obj["spec"].(map[string]any)
		if _, set := spec["color"]; set {
			return false, "color is not allowed", nil
		}
		return true, "", nil
	}
	counting := func(ctx context.Context, version string, obj map[string]any) (bool, string, error) {
		ok, msg, err := admit(ctx, version, obj)
		asked++
		if !ok {
			denied++
		}
		return ok, msg, err
	}
	rep, err := Run(context.Background(), Options{CRD: crd, Converter: conv, N: 20, Seed: 3, Admit: counting, Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	if asked != 40 || denied == 0 || rep.Denied != denied || rep.RoundTrips != 40-denied {
		t.Errorf("asked %d, denied %d; report: %d denied, %d round trips: want every object asked and the denied ones not round-tripped", asked, denied, rep.Denied, rep.RoundTrips)
	}
	if !rep.Clean() {
		t.Errorf("losses %+v: objects with a color were denied, so nothing can lose it", rep.Losses)
	}
	_, err = Run(context.Background(), Options{CRD: crd, Converter: conv, N: 1, Seed: 3,
		Admit: func(context.Context, string, map[string]any) (bool, string, error) {
			return false, "", fmt.Errorf("connection refused")
		}})
	if err == nil || !strings.Contains(err.Error(), "ask the validating webhook") {
		t.Errorf("an admitter that cannot be asked: %v, want the run stopped naming it", err)
	}
}

func TestRunReportsARefusedConversion(t *testing.T) {
	conv, crd := gadgets(t, &gadgetServer{refuseHourly: true})
	seed := map[string]any{"apiVersion": "test.hookback.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": "hourly"},
		"spec": map[string]any{"size": 2, "schedule": "@hourly"}}
	rep, err := Run(context.Background(), Options{CRD: crd, Converter: conv, N: 3, Seed: 5, Seeds: []map[string]any{seed}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failures) == 0 {
		t.Fatalf("no failure reported: %+v", rep)
	}
	f := rep.Failures[0]
	if f.From != "v1" || f.To != "v2" || !f.Refused || !strings.Contains(f.Message, `cannot parse schedule "@hourly"`) {
		t.Errorf("failure %+v: want v1->v2 refused with the webhook's message", f)
	}
}

func TestLossObjectIsMinimal(t *testing.T) {
	lossy := &gadgetServer{dropColor: true}
	conv, crd := gadgets(t, lossy)
	rep, err := Run(context.Background(), Options{CRD: crd, Converter: conv, N: 10, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Losses) == 0 {
		t.Fatal("no loss found")
	}
	l := rep.Losses[0]
	spec, _ := l.Object["spec"].(map[string]any)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range spec {
			if !yield(k) {
				return
			}
		}
	})
	// size is required; everything else but the lost color went.
	if !slices.Equal(keys, []string{"color", "size"}) || l.Object["status"] != nil {
		t.Errorf("minimal object %v: want spec.color and the required spec.size only", l.Object)
	}
	if !rep.Clean() && l.Count < 1 {
		t.Errorf("loss %+v counts no round trip", l)
	}
}

func TestOptionsValidate(t *testing.T) {
	err := Options{N: 0, ReviewVersion: "v2"}.Validate()
	for _, want := range []string{"no CustomResourceDefinition", "no converter", "0 objects per version", `review version "v2"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
}

func TestReadCRDsErrors(t *testing.T) {
	_, err := ReadCRDs("testdata/sample.yaml")
	if err == nil || !strings.Contains(err.Error(), "no CustomResourceDefinition found") {
		t.Errorf("ReadCRDs of a sample: %v", err)
	}
	_, err = ReadCRDs("testdata/missing.yaml")
	if err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("ReadCRDs of a missing file: %v", err)
	}
}
