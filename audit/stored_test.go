package audit

import (
	"context"
	"errors"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/upstream"
)

// versionLister serves widgets stored in v1 as the apiserver would: a list
// in v1 gives them as stored; a list in v2 converts them all and so fails
// as a whole, as it does when one of them does not convert.
type versionLister struct {
	stored []map[string]any
	mu     sync.Mutex
	listed []string
}

func (l *versionLister) Resources(context.Context) ([]APIResource, error) { return served, nil }

func (l *versionLister) List(_ context.Context, gvr schema.GroupVersionResource, each func(map[string]any) error) error {
	l.mu.Lock()
	l.listed = append(l.listed, gvr.Resource+"/"+gvr.Version)
	l.mu.Unlock()
	if gvr.Resource != "widgets" {
		return nil
	}
	if gvr.Version != "v1" {
		return errors.New(`conversion webhook for example.com/v1, Kind=Widget failed: cannot convert refuse-me`)
	}
	for _, o := range l.stored {
		if err := each(o); err != nil {
			return err
		}
	}
	return nil
}

// TestRunListsInTheStorageVersion: a webhook registered for v2 of a CRD
// stored in v1 is asked about every stored widget that converts to v2
// (converted through the CRD's conversion webhook, one at a time), and the
// widget that does not convert is a finding of its own; without the
// conversion webhook the list in v2 fails for the whole webhook, as it
// did before.
func TestRunListsInTheStorageVersion(t *testing.T) {
	widgets := CRDInfo{Group: "example.com", Resource: "widgets", Namespaced: true, Storage: "v1", Served: []string{"v1", "v2"}, ReviewVersion: conversion.V1}
	up := &widgetUpstream{}
	srv := httptest.NewServer(up)
	defer srv.Close()
	base, _ := url.Parse(srv.URL)
	conv, err := upstream.NewConverter(upstream.Options{Base: base}, "/convert")
	if err != nil {
		t.Fatal(err)
	}
	stored := []map[string]any{
		storedWidget("a", "good", map[string]any{"size": int64(3), "color": "red"}, nil),
		storedWidget("a", "refuse-me", map[string]any{"size": int64(1)}, nil),
		storedWidget("a", "bad", map[string]any{"size": int64(2)}, nil),
	}
	hook := func() []Webhook {
		return []Webhook{{Name: "vwidget-v2.example.com", Handler: &recorder{}, ReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{rule([]string{"example.com"}, []string{"v2"}, []string{"widgets"}, admissionregistrationv1.Create)}}}
	}
	tests := []struct {
		name        string
		conversions []Conversion
		want        map[string]string // name (or "-" for a webhook's row): result and message prefix
		wantListed  string
	}{
		{name: "with the conversion webhook", conversions: []Conversion{{CRD: "widgets.example.com", Converter: conv}},
			want: map[string]string{
				"good":      "allowed ",
				"bad":       "denied name is bad",
				"refuse-me": "unconvertible stored in v1, it cannot be converted to v2, the version this webhook registered for: cannot convert refuse-me (in the cluster",
			}, wantListed: "widgets/v1"},
		{name: "without it, the list in v2 fails", want: map[string]string{
			"-": "error list widgets: conversion webhook for example.com/v1, Kind=Widget failed",
		}, wantListed: "widgets/v2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hooks := hook()
			lister := &versionLister{stored: stored}
			results, err := Run(context.Background(), Options{Webhooks: hooks, Lister: lister, CRDs: memCRDs{"widgets.example.com": widgets}, Conversions: tt.conversions})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, r := range results {
				if strings.HasPrefix(r.Operation, OperationConvert) {
					continue
				}
				name := r.Name
				if name == "" {
					name = "-"
				}
				got[name] = string(r.Result) + " " + r.Message
			}
			if len(got) != len(tt.want) {
				t.Errorf("rows %v, want %v", got, tt.want)
			}
			for k, w := range tt.want {
				if !strings.HasPrefix(got[k], w) {
					t.Errorf("%s: %q, want %q", k, got[k], w)
				}
			}
			if !slices.Contains(lister.listed, tt.wantListed) {
				t.Errorf("listed %v, want %s", lister.listed, tt.wantListed)
			}
			rec := hooks[0].Handler.(*recorder)
			for _, req := range rec.reqs {
				var obj struct {
					APIVersion string         `json:"apiVersion"`
					Spec       map[string]any `json:"spec"`
				}
				if err := req.DecodeObject(&obj); err != nil || obj.APIVersion != "example.com/v2" || obj.Spec["count"] == nil || req.Kind.Version != "v2" {
					t.Errorf("review of %s: object %+v (%v), kind %v: want the widget converted to v2", req.Name, obj, err, req.Kind)
				}
			}
			if n := Count(results); tt.conversions != nil && (len(rec.reqs) != 2 || n.Unconvertible != 1 || n.Denied != 1 || n.Findings(false) < 2 || n.Errors != 0) {
				t.Errorf("%d reviews sent, counts %+v: want good and bad reviewed, refuse-me unconvertible, no error", len(rec.reqs), n)
			}
		})
	}
}
