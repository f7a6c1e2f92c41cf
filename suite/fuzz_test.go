package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/admission"
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

// TestFuzzAdmitter: the fuzzer's objects go to the validating webhooks
// whose rules match them (the v1 webhook for a v1 gadget, and under
// matchPolicy Equivalent the v2 one with the gadget converted to v2, not
// a mutating one), and the first denial is the answer.
func TestFuzzAdmitter(t *testing.T) {
	var calls []string
	var mu sync.Mutex
	deny := admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		mu.Lock()
		var obj struct {
			Spec map[string]any `json:"spec"`
		}
		_ = json.Unmarshal(req.Object.Raw, &obj)
		_, count := obj.Spec["count"]
		calls = append(calls, fmt.Sprintf("%s %s count=%v", req.Kind.Version, req.Name, count))
		mu.Unlock()
		if strings.Contains(string(req.Object.Raw), `"color":"red"`) {
			return admission.Denied("no red gadgets")
		}
		return admission.Allowed("")
	})
	rules := func(version string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule: admissionregistrationv1.Rule{APIGroups: []string{"test.hookback.dev"}, APIVersions: []string{version}, Resources: []string{"gadgets"}}}}
	}
	hooks := []*Webhook{
		{Configuration: "v", Path: "/v1", Handler: deny, Validating: &admissionregistrationv1.ValidatingWebhook{Name: "v1.example.com", Rules: rules("v1"), AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "v", Path: "/v2", Handler: deny, Validating: &admissionregistrationv1.ValidatingWebhook{Name: "v2.example.com", Rules: rules("v2"), AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "m", Path: "/m", Handler: deny, Mutating: &admissionregistrationv1.MutatingWebhook{Name: "m.example.com", Rules: rules("v1"), AdmissionReviewVersions: []string{"v1"}}},
	}
	admit := FuzzAdmitter(hooks, "gadgets", []ConversionWebhook{{CRD: "gadgets.test.hookback.dev", Converter: gadgetConverter(t, false)}})
	gadget := func(name, color string) map[string]any {
		return map[string]any{"apiVersion": "test.hookback.dev/v1", "kind": "Gadget", "metadata": map[string]any{"name": name, "namespace": "default"},
			"spec": map[string]any{"size": 1, "color": color}}
	}
	if ok, msg, err := admit(context.Background(), "v1", gadget("red", "red")); ok || err != nil || msg != "no red gadgets" {
		t.Errorf("a red gadget: %v %q %v, want denied with the webhook's message", ok, msg, err)
	}
	if ok, _, err := admit(context.Background(), "v1", gadget("blue", "blue")); !ok || err != nil {
		t.Errorf("a blue gadget: %v %v, want admitted", ok, err)
	}
	if strings.Join(calls, ",") != "v1 red count=false,v1 blue count=false,v2 blue count=true" {
		t.Errorf("calls %v: want the v1 validating webhook, then (for an object it admits) the v2 one with the object in v2", calls)
	}
}

// TestFuzzRowsLeadWithLosses: the fields lost fail first, then the
// conversions that failed; the absent fields that came back empty follow,
// passing, so that a run whose only findings are those passes.
func TestFuzzRowsLeadWithLosses(t *testing.T) {
	emptied := []roundtrip.Loss{{From: "v1", Via: "v2", Path: "spec.jobTemplate.spec", Before: "<missing>", After: `{"template":{}}`, Count: 4}}
	tests := []struct {
		name string
		rep  roundtrip.Report
		want []string // status detail-prefix
	}{
		{name: "losses, a failure and an empty structure",
			rep: roundtrip.Report{CRD: "cronjobs.test", Losses: []roundtrip.Loss{{From: "v1", Via: "v2", Path: "status.conditions", Before: "[]", After: "<missing>", Count: 2}},
				Failures: []roundtrip.Failure{{From: "v2", To: "v1", Refused: true, Message: "no", Count: 1}}, Emptied: emptied},
			want: []string{"FAIL status.conditions lost", "FAIL the conversion webhook refused", "PASS spec.jobTemplate.spec came back as an empty structure"}},
		{name: "only an empty structure",
			rep:  roundtrip.Report{CRD: "cronjobs.test", Emptied: emptied},
			want: []string{"PASS 0 objects", "PASS spec.jobTemplate.spec came back as an empty structure"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range FuzzRows(tc.rep, nil) {
				got = append(got, r.Status+" "+r.Detail)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("rows %q, want %q", got, tc.want)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("row %d: %q, want it to start with %q", i, got[i], w)
				}
			}
			if c := Count(FuzzRows(tc.rep, nil)); (c.Failed == 0) != (len(tc.rep.Losses)+len(tc.rep.Failures) == 0) {
				t.Errorf("counts %+v: want a failure only for losses and failed conversions", c)
			}
		})
	}
}
