package audit

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/report"
)

// memLister serves objects from memory; a resource in fail cannot be listed.
type memLister struct {
	objects map[string][]map[string]any
	fail    map[string]bool
	mu      sync.Mutex
	listed  []string
}

func (m *memLister) Resources(context.Context) ([]APIResource, error) { return served, nil }

func (m *memLister) List(_ context.Context, gvr schema.GroupVersionResource, each func(map[string]any) error) error {
	m.mu.Lock()
	m.listed = append(m.listed, gvr.Resource)
	m.mu.Unlock()
	if m.fail[gvr.Resource] {
		return errors.New("the server could not find the requested resource")
	}
	for _, o := range m.objects[gvr.Resource] {
		if err := each(o); err != nil {
			return err
		}
	}
	return nil
}

func object(kind, ns, name string, labels map[string]any) map[string]any {
	meta := map[string]any{"name": name}
	if ns != "" {
		meta["namespace"] = ns
	}
	if labels != nil {
		meta["labels"] = labels
	}
	return map[string]any{"apiVersion": "v1", "kind": kind, "metadata": meta}
}

// recorder answers like a webhook that denies names containing "bad",
// patches "patch-me" and fails on "broken", and keeps every request.
type recorder struct {
	mu   sync.Mutex
	reqs []admission.Request
}

func (r *recorder) Handle(_ context.Context, req admission.Request) admission.Response {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	switch {
	case strings.Contains(req.Name, "bad"):
		return admission.Denied("name is bad")
	case strings.Contains(req.Name, "patch-me"):
		return admission.Patched("", admission.PatchOp{Op: "add", Path: "/data/x", Value: "secret-value"})
	case strings.Contains(req.Name, "broken"):
		return admission.CallFailed(errors.New("upstream answered uid \"x\" for request \"y\""))
	}
	return admission.Allowed("")
}

func TestRun(t *testing.T) {
	lister := &memLister{objects: map[string][]map[string]any{
		"namespaces": {object("Namespace", "", "on", map[string]any{"audit": "yes"}), object("Namespace", "", "off", nil)},
		"pods": {object("Pod", "on", "good", nil), object("Pod", "on", "bad", nil), object("Pod", "off", "bad-but-unselected", nil),
			object("Pod", "on", "broken", nil), object("Pod", "on", "skipped", map[string]any{"skip": "true"})},
		"secrets": {object("Secret", "on", "patch-me", nil)},
	}, fail: map[string]bool{"deployments": true}}
	h := &recorder{}
	hooks := []Webhook{
		{Name: "pods.example.com", Handler: h, ReviewVersions: []string{"v1beta1", "v1"},
			Rules:             []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"pods"}, admissionregistrationv1.Update)},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"audit": "yes"}},
			ObjectSelector:    &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
		{Name: "deployments.example.com", Handler: h, ReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{"apps"}, []string{"v1"}, []string{"deployments"}, admissionregistrationv1.Create)}},
	}
	var progress []Progress
	results, err := Run(context.Background(), Options{Webhooks: hooks, Lister: lister, Concurrency: 3,
		UserInfo: Identity{Username: "alice"}, Progress: func(p Progress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Result{}
	for _, r := range results {
		got[r.Resource+" "+r.Namespace+"/"+r.Name] = r
	}
	want := map[string]Outcome{"pods on/good": Allowed, "pods on/bad": Denied, "pods on/broken": Error, "deployments.apps /": Error}
	if len(got) != len(want) {
		t.Fatalf("results %+v, want %v", results, want)
	}
	for k, o := range want {
		if got[k].Result != o {
			t.Errorf("%s: %s (%s), want %s", k, got[k].Result, got[k].Message, o)
		}
	}
	if m := got["pods on/bad"].Message; m != "name is bad" {
		t.Errorf("denial message %q", m)
	}
	// A report per review, and one when the listing ends (reviews may
	// still be in flight then), in order.
	if len(h.reqs) != 3 || len(progress) != 4 || progress[3] != (Progress{Done: 3, Queued: 3}) {
		t.Fatalf("%d reviews sent, progress %+v: want 3 reviews, ending done 3 of 3, listed", len(h.reqs), progress)
	}
	for i, p := range progress[1:] {
		prev := progress[i]
		if p.Queued < p.Done || p.Done < prev.Done || p.Done > prev.Done+1 || p.Listing && !prev.Listing {
			t.Errorf("progress %+v after %+v: want at most one more done, never more done than queued, listing ended once", p, prev)
		}
	}
	for _, req := range h.reqs {
		if !req.IsDryRun() || req.Operation != "UPDATE" || req.ReviewVersion != reviewV1beta1 || req.UserInfo.Username != "alice" ||
			!bytes.Equal(req.Object.Raw, req.OldObject.Raw) || !bytes.Contains(req.Review(), []byte(`"dryRun":true`)) {
			t.Errorf("review of %s: dryRun %v, operation %s, version %s, user %q, oldObject %s", req.Name, req.IsDryRun(), req.Operation, req.ReviewVersion, req.UserInfo.Username, req.OldObject.Raw)
		}
	}
}

func TestRunPatchOfSecretRedacted(t *testing.T) {
	lister := &memLister{objects: map[string][]map[string]any{"secrets": {object("Secret", "on", "patch-me", nil)}}}
	served := append(served, APIResource{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, Namespaced: true, Listable: true, Preferred: true})
	hook := Webhook{Name: "secrets.example.com", Handler: &recorder{}, ReviewVersions: []string{"v1"},
		Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{""}, []string{"v1"}, []string{"secrets"}, admissionregistrationv1.Create)}}
	results, err := Run(context.Background(), Options{Webhooks: []Webhook{hook}, Lister: servedLister{lister, served}})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Result != Patched || results[0].Patch[0].Value != redacted {
		t.Fatalf("results %+v: want one patch with its value redacted", results)
	}
	var out bytes.Buffer
	if err := report.Write(&out, report.FormatTable, Report{Results: results}); err != nil || strings.Contains(out.String(), "secret-value") {
		t.Fatalf("table shows the secret or failed (%v):\n%s", err, out.String())
	}
}

type servedLister struct {
	*memLister
	served []APIResource
}

func (s servedLister) Resources(context.Context) ([]APIResource, error) { return s.served, nil }

func TestWriteJUnit(t *testing.T) {
	results := []Result{
		{Webhook: "a", Resource: "pods", Namespace: "ns", Name: "p1", Operation: "CREATE", Result: Denied, Message: "no"},
		{Webhook: "a", Resource: "pods", Namespace: "ns", Name: "p2", Operation: "CREATE", Result: Patched, Patch: []PatchOperation{{Op: "add", Path: "/x", Value: 1}}},
		{Webhook: "b", Resource: "pods", Namespace: "ns", Name: "p1", Operation: "CREATE", Result: Allowed},
		{Webhook: "b", Resource: "deployments.apps", Result: Error, Message: "list deployments.apps: forbidden"},
	}
	for _, failPatched := range []bool{false, true} {
		t.Run(fmt.Sprint("failPatched=", failPatched), func(t *testing.T) {
			var out bytes.Buffer
			if err := report.Write(&out, report.FormatJUnit, Report{Results: results, FailPatched: failPatched}); err != nil {
				t.Fatal(err)
			}
			var doc report.JUnit
			if err := xml.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			wantA := 1
			if failPatched {
				wantA = 2
			}
			if len(doc.Suites) != 2 || doc.Suites[0].Tests != 2 || doc.Suites[0].Failures != wantA || doc.Suites[1].Errors != 1 || doc.Suites[1].Failures != 0 {
				t.Fatalf("suites %+v", doc.Suites)
			}
		})
	}
}
