package suite

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/hookback/hookback/conversion/roundtrip"
	"github.com/hookback/hookback/upstream"
)

// gadgetConverter converts conversion/roundtrip/testdata/gadgets-crd.yaml's
// Gadget: v1 spec.size is v2 spec.count; dropColor loses spec.color on the
// way to v2.
func gadgetConverter(t *testing.T, dropColor bool) *upstream.Converter {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID               string           `json:"uid"`
				DesiredAPIVersion string           `json:"desiredAPIVersion"`
				Objects           []map[string]any `json:"objects"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		for _, o := range rv.Request.Objects {
			spec, _ := o["spec"].(map[string]any)
			from, to := "size", "count"
			if strings.HasSuffix(rv.Request.DesiredAPIVersion, "/v1") {
				from, to = to, from
			}
			if v, ok := spec[from]; ok {
				spec[to] = v
				delete(spec, from)
			}
			if dropColor && to == "count" {
				delete(spec, "color")
			}
			o["apiVersion"] = rv.Request.DesiredAPIVersion
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "ConversionReview",
			"response": map[string]any{"uid": rv.Request.UID, "result": map[string]any{"status": "Success"}, "convertedObjects": rv.Request.Objects}})
	}))
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	c, err := upstream.NewConverter(upstream.Options{Base: base}, "/convert")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFuzzLossCases: the cases the conversion fuzzer writes load as a
// suite, fail against the converter that loses the field (with the path in
// the diff) and pass against one that keeps it.
func TestFuzzLossCases(t *testing.T) {
	crds, err := roundtrip.ReadCRDs("../conversion/roundtrip/testdata/gadgets-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	crd := crds[0]
	lossy := gadgetConverter(t, true)
	rep, err := roundtrip.Run(context.Background(), roundtrip.Options{CRD: crd, Converter: lossy, N: 10, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := WriteLossCases(dir, rep, crd.Spec.Group)
	if err != nil || len(files) != 2 {
		t.Fatalf("files %v, %v: want one per loss (v1->v2, v2->v1 of spec.color)", files, err)
	}
	b, _ := os.ReadFile(files[LossKey(roundtrip.Loss{From: "v1", Via: "v2", Path: "spec.color"})])
	if !strings.Contains(string(b), "--seed 9") || !strings.Contains(string(b), "loses spec.color") {
		t.Errorf("case file:\n%s\nwant the seed and the loss in its heading", b)
	}
	loaded, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		conv *upstream.Converter
		want string
	}{{"the lossy webhook", lossy, Fail}, {"a fixed webhook", gadgetConverter(t, false), Pass}} {
		t.Run(tc.name, func(t *testing.T) {
			rows := Run(context.Background(), loaded, Options{Conversions: []ConversionWebhook{{CRD: crd.Name, Converter: tc.conv}}})
			if len(rows) != 2 {
				t.Fatalf("rows %+v: want one per case", rows)
			}
			for _, r := range rows {
				if r.Status != tc.want || (tc.want == Fail && !strings.Contains(r.Diff, "color")) {
					t.Errorf("%s: %s %s\n%s", r.Case, r.Status, r.Detail, r.Diff)
				}
			}
		})
	}
	again, err := WriteLossCases(dir, rep, crd.Spec.Group)
	if err != nil || len(again) != 0 {
		t.Errorf("a second write: %v, %v: want the existing cases left as they are", again, err)
	}
}
