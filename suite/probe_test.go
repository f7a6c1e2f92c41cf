package suite

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hookback/hookback/lint"
	"github.com/hookback/hookback/manifests"
	"github.com/hookback/hookback/upstream"
)

func probeHooks(t *testing.T) []*lint.Hook {
	t.Helper()
	docs, err := manifests.Load([]string{filepath.Join("testdata", "probe", "webhooks.yaml")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	in, err := lint.Read(docs)
	if err != nil {
		t.Fatal(err)
	}
	return in.Hooks
}

// TestProbeSendsEachMutatingWebhookItsOwnOutput: a minimal pod goes to
// each mutating webhook's path of the server, then what it made; the
// naive injector's second patch is reported, the checked one's is not,
// and the validating webhook is not called.
func TestProbeSendsEachMutatingWebhookItsOwnOutput(t *testing.T) {
	s := newReviewServer(t, map[string]answer{"/naive": sidecar, "/checked": checkedSidecar})
	base, _ := url.Parse(s.srv.URL)
	res, err := Probe(context.Background(), probeHooks(t), ProbeOptions{Upstream: upstream.Options{Base: base}})
	if err != nil {
		t.Fatal(err)
	}
	want := []lint.Reinvocation{{Object: "MutatingWebhookConfiguration/injector", Webhook: "naive.example.com",
		Sample: "pods CREATE (a minimal object)", Paths: []string{"/spec/containers/-"}, Message: "second call patched /spec/containers/-"}}
	if !slices.EqualFunc(res.Reinvocations, want, func(a, b lint.Reinvocation) bool {
		return a.Object == b.Object && a.Webhook == b.Webhook && a.Sample == b.Sample && slices.Equal(a.Paths, b.Paths) && a.Message == b.Message
	}) {
		t.Errorf("reinvocations %+v, want %+v", res.Reinvocations, want)
	}
	if len(res.Skipped) > 0 {
		t.Errorf("skipped %q", res.Skipped)
	}
	for path, n := range map[string]int{"/naive": 2, "/checked": 2, "/validate": 0} {
		if got := len(s.objects(path)); got != n {
			t.Errorf("%s called %d times, want %d", path, got, n)
		}
	}
	if got := s.objects("/naive")[0]; got["metadata"].(map[string]any)["name"] != probeName {
		t.Errorf("the sample is not hookback's minimal pod: %v", got)
	}
	in := &lint.Input{Hooks: probeHooks(t), Reinvocations: res.Reinvocations}
	var found []string
	for _, f := range lint.Run(in, lint.Options{FailOn: "error"}).Findings {
		if f.Rule == "reinvocation-unsafe" {
			found = append(found, string(f.Severity)+" "+f.Webhook+" "+f.Path+": "+f.Message)
		}
	}
	wantF := "error naive.example.com webhooks[0].reinvocationPolicy: not idempotent: sent its own output for pods CREATE (a minimal object), second call patched /spec/containers/-; " +
		"its reinvocationPolicy is IfNeeded: the apiserver calls it again with its own output whenever a later webhook changes the object"
	if len(found) != 1 || found[0] != wantF {
		t.Errorf("lint findings %q, want %q", found, wantF)
	}
}

// TestProbeFromSuiteCases: with cases, each CREATE case whose object the
// webhook's configuration matches is a sample.
func TestProbeFromSuiteCases(t *testing.T) {
	s := newReviewServer(t, map[string]answer{"/naive": sidecar, "/checked": checkedSidecar})
	base, _ := url.Parse(s.srv.URL)
	path := writeSuite(t, header+"- {name: web, operation: CREATE, namespace: y, object: "+pod("web", "")+", expect: {result: allowed}}\n"+
		"- {name: old, operation: DELETE, namespace: y, oldObject: "+pod("old", "")+", expect: {result: allowed}}\n")
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Probe(context.Background(), probeHooks(t), ProbeOptions{Upstream: upstream.Options{Base: base}, Cases: files})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reinvocations) != 1 || !strings.HasSuffix(res.Reinvocations[0].Sample, ":web") {
		t.Errorf("reinvocations %+v, want the naive injector's on case web", res.Reinvocations)
	}
	if got := s.objects("/naive")[0]; got["metadata"].(map[string]any)["name"] != "web" {
		t.Errorf("the sample is not the case's object: %v", got)
	}
}

// TestProbeWithNoServer: nothing answers: an error that names the
// webhooks and what happened, not a clean report.
func TestProbeWithNoServer(t *testing.T) {
	s := newReviewServer(t, nil)
	base, _ := url.Parse(s.srv.URL)
	s.srv.Close()
	_, err := Probe(context.Background(), probeHooks(t), ProbeOptions{Upstream: upstream.Options{Base: base}})
	if !errors.Is(err, ErrProbe) || !strings.Contains(err.Error(), "naive.example.com") {
		t.Errorf("err = %v, want ErrProbe naming the webhooks", err)
	}
}
