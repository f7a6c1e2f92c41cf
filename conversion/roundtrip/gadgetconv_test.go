package roundtrip

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/hookback/hookback/upstream"
)

// gadgetServer is a conversion webhook for conversion/roundtrip/testdata/gadgets-crd.yaml, as a
// developer's server answers: v1 spec.size is v2 spec.count, everything
// else is copied. dropColor makes v2 lose spec.color; refuseHourly makes
// it refuse a schedule of "@hourly" (the kubebuilder tutorial's cron
// library cannot read it). Reviews counts the reviews it answered.
type gadgetServer struct {
	dropColor, refuseHourly bool
	reviews                 atomic.Int64
}

func (g *gadgetServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.reviews.Add(1)
	var review struct {
		APIVersion string `json:"apiVersion"`
		Request    struct {
			UID               string           `json:"uid"`
			DesiredAPIVersion string           `json:"desiredAPIVersion"`
			Objects           []map[string]any `json:"objects"`
		} `json:"request"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&review); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	result := map[string]any{"status": "Success"}
	converted := []map[string]any{}
	for _, o := range review.Request.Objects {
		spec, _ := o["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		to := strings.TrimPrefix(review.Request.DesiredAPIVersion, "test.hookback.dev/")
		switch {
		case to == "v2" && g.refuseHourly && spec["schedule"] == "@hourly":
			result = map[string]any{"status": "Failure", "message": `cannot parse schedule "@hourly": expected 5 fields`}
		case to == "v2":
			if v, ok := spec["size"]; ok {
				spec["count"] = v
				delete(spec, "size")
			}
			if g.dropColor {
				delete(spec, "color")
			}
		case to == "v1":
			if v, ok := spec["count"]; ok {
				spec["size"] = v
				delete(spec, "count")
			}
		}
		o["spec"] = spec
		o["apiVersion"] = review.Request.DesiredAPIVersion
		converted = append(converted, o)
	}
	resp := map[string]any{"uid": review.Request.UID, "result": result}
	if result["status"] == "Success" {
		resp["convertedObjects"] = converted
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": "ConversionReview", "response": resp})
}

// gadgets serves g and returns a converter forwarding to it with
// hookback's answer checks, and the CRD.
func gadgets(t *testing.T, g *gadgetServer) (*upstream.Converter, *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	base, _ := url.Parse(srv.URL)
	c, err := upstream.NewConverter(upstream.Options{Base: base}, "/convert")
	if err != nil {
		t.Fatal(err)
	}
	crds, err := ReadCRDs("testdata/gadgets-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c, crds[0]
}
