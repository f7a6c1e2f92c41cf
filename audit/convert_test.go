package audit

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/upstream"
)

// widgetUpstream is a conversion webhook for widgets.example.com: v1 (the
// hub, spec.size and spec.color) and v2 (spec.count, and spec.color unless
// dropColor: a spoke that lacks a field the hub keeps). It refuses the
// object named refuse-me and answers another uid for bad-uid.
type widgetUpstream struct {
	dropColor bool
	calls     atomic.Int64
}

func (u *widgetUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	var review struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID               string           `json:"uid"`
			DesiredAPIVersion string           `json:"desiredAPIVersion"`
			Objects           []map[string]any `json:"objects"`
		} `json:"request"`
	}
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resp := map[string]any{"uid": review.Request.UID, "result": map[string]any{"status": "Success"}}
	var out []map[string]any
	for _, o := range review.Request.Objects {
		meta := o["metadata"].(map[string]any)
		switch meta["name"] {
		case "refuse-me":
			resp["result"] = map[string]any{"status": "Failure", "message": "cannot convert refuse-me"}
		case "bad-uid":
			resp["uid"] = "another"
		}
		out = append(out, u.convert(o, review.Request.DesiredAPIVersion))
	}
	resp["convertedObjects"] = out
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": "ConversionReview", "response": resp})
}

func (u *widgetUpstream) convert(o map[string]any, to string) map[string]any {
	spec, _ := o["spec"].(map[string]any)
	next := map[string]any{}
	if c, ok := spec["color"]; ok && !(u.dropColor && to == "example.com/v2") {
		next["color"] = c
	}
	switch to {
	case "example.com/v2":
		if s, ok := spec["size"]; ok {
			next["count"] = s
		}
	case "example.com/v1":
		if s, ok := spec["count"]; ok {
			next["size"] = s
		}
	}
	return map[string]any{"apiVersion": to, "kind": "Widget", "metadata": o["metadata"], "spec": next}
}

type memCRDs map[string]CRDInfo

func (m memCRDs) CRD(_ context.Context, name string) (CRDInfo, bool, error) {
	info, ok := m[name]
	return info, ok, nil
}

func storedWidget(ns, name string, spec map[string]any, labels map[string]any) map[string]any {
	o := object("Widget", ns, name, labels)
	o["apiVersion"] = "example.com/v1"
	meta := o["metadata"].(map[string]any)
	meta["uid"], meta["resourceVersion"], meta["generation"] = "uid-"+name, "42", int64(1)
	if spec != nil {
		o["spec"] = spec
	}
	return o
}

func TestRunConversions(t *testing.T) {
	widgets := CRDInfo{Group: "example.com", Resource: "widgets", Namespaced: true, Storage: "v1", Served: []string{"v1", "v2"}, ReviewVersion: conversion.V1}
	tests := []struct {
		name      string
		dropColor bool
		objects   []map[string]any
		scope     *metav1.LabelSelector
		want      map[string]string // namespace/name: result and message
	}{
		{
			name: "a lossless converter keeps every field", objects: []map[string]any{
				storedWidget("a", "red", map[string]any{"size": int64(3), "color": "red"}, nil),
				storedWidget("a", "plain", map[string]any{"size": int64(1)}, nil)},
			want: map[string]string{"a/red": "kept ", "a/plain": "kept "},
		},
		{
			name: "a spoke that drops color loses it for the objects that set it", dropColor: true, objects: []map[string]any{
				storedWidget("a", "red", map[string]any{"size": int64(3), "color": "red"}, nil),
				storedWidget("a", "plain", map[string]any{"size": int64(1)}, nil)},
			want: map[string]string{"a/red": `lost spec.color: "red" -> <missing>`, "a/plain": "kept "},
		},
		{
			name: "refused and wrongly answered conversions", objects: []map[string]any{
				storedWidget("a", "refuse-me", map[string]any{"size": int64(1)}, nil),
				storedWidget("a", "bad-uid", map[string]any{"size": int64(1)}, nil)},
			want: map[string]string{"a/refuse-me": "failed to v2: cannot convert refuse-me",
				"a/bad-uid": `error to v2: hookback: upstream answered uid "another" for request`},
		},
		{
			name: "the scope narrows the objects", dropColor: true, objects: []map[string]any{
				storedWidget("a", "red", map[string]any{"color": "red"}, map[string]any{"audit": "yes"}),
				storedWidget("a", "other", map[string]any{"color": "red"}, nil)},
			scope: &metav1.LabelSelector{MatchLabels: map[string]string{"audit": "yes"}},
			want:  map[string]string{"a/red": `lost spec.color: "red" -> <missing>`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := &widgetUpstream{dropColor: tt.dropColor}
			srv := httptest.NewServer(up)
			defer srv.Close()
			base, _ := url.Parse(srv.URL)
			conv, err := upstream.NewConverter(upstream.Options{Base: base}, "/convert")
			if err != nil {
				t.Fatal(err)
			}
			lister := &memLister{objects: map[string][]map[string]any{"widgets": tt.objects}}
			results, err := Run(context.Background(), Options{Lister: lister, CRDs: memCRDs{"widgets.example.com": widgets},
				Conversions: []Conversion{{CRD: "widgets.example.com", Converter: conv, ObjectSelector: tt.scope}}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range results {
				if r.Webhook != "conversion widgets.example.com" || r.Operation != "CONVERT v1->v2->v1" || r.Resource != "widgets.example.com" {
					t.Errorf("row %+v: want webhook, operation and resource of the round trip", r)
				}
				got[r.Namespace+"/"+r.Name] = string(r.Result) + " " + r.Message
			}
			if len(got) != len(tt.want) {
				t.Fatalf("rows %v, want %v", got, tt.want)
			}
			for k, w := range tt.want {
				if !strings.HasPrefix(got[k], w) {
					t.Errorf("%s: %q, want %q", k, got[k], w)
				}
			}
			if up.calls.Load() == 0 {
				t.Error("the upstream was never called")
			}
		})
	}
}

func TestConversionCountsAndJUnit(t *testing.T) {
	results := []Result{
		{Webhook: "conversion w", Name: "a", Operation: "CONVERT v1->v2->v1", Result: Lost},
		{Webhook: "conversion w", Name: "b", Operation: "CONVERT v1->v2->v1", Result: Kept},
		{Webhook: "v", Name: "c", Operation: "CREATE", Result: Allowed},
	}
	n := Count(results)
	if n.RoundTrips != 2 || n.Reviews != 1 || n.Lost != 1 || n.Kept != 1 || n.Findings(false) != 1 {
		t.Errorf("counts %+v: want 2 round trips (1 lost, 1 kept), 1 review, 1 finding", n)
	}
	var junit strings.Builder
	if err := report.Write(&junit, report.FormatJUnit, Report{Results: results}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(junit.String(), `<testsuite name="conversion w" tests="2" failures="1" errors="0">`) {
		t.Errorf("junit:\n%s\nwant one failure (the lost round trip) in the suite of conversion w", junit.String())
	}
}

func TestCRDInfo(t *testing.T) {
	versions := []any{
		map[string]any{"name": "v1", "served": true, "storage": true},
		map[string]any{"name": "v2", "served": true, "storage": false},
		map[string]any{"name": "v0", "served": false, "storage": false},
	}
	tests := []struct {
		name    string
		reviews []any
		want    string
	}{
		{name: "no webhook stanza", want: conversion.V1},
		{name: "v1beta1 only", reviews: []any{"v1beta1"}, want: conversion.V1beta1},
		{name: "the first hookback speaks", reviews: []any{"v2", "v1", "v1beta1"}, want: conversion.V1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := map[string]any{"group": "example.com", "scope": "Namespaced", "names": map[string]any{"plural": "widgets"}, "versions": versions}
			if tt.reviews != nil {
				spec["conversion"] = map[string]any{"strategy": "Webhook", "webhook": map[string]any{"conversionReviewVersions": tt.reviews}}
			}
			got := crdInfo(map[string]any{"spec": spec})
			if got.Group != "example.com" || got.Resource != "widgets" || !got.Namespaced || got.Storage != "v1" ||
				strings.Join(got.Served, ",") != "v1,v2" || got.ReviewVersion != tt.want {
				t.Errorf("crdInfo = %+v, want widgets.example.com stored in v1, served v1,v2, review %s", got, tt.want)
			}
		})
	}
}
