package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/go-logr/logr"
	"gomodules.xyz/jsonpatch/v2"
	corev1 "k8s.io/api/core/v1"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	hookback "github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/server"
)

// Both servers run the same decision: decode the pod, then answer with the
// one JSON patch operation that adds a label.
func labelOp(raw []byte) (path string, value any, err error) {
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		return "", nil, err
	}
	if len(pod.Labels) == 0 {
		return "/metadata/labels", map[string]string{"bench": "yes"}, nil
	}
	return "/metadata/labels/bench", "yes", nil
}

func hookbackHandler() http.Handler {
	h := hookback.HandlerFunc(func(_ context.Context, req hookback.Request) hookback.Response {
		path, value, err := labelOp(req.Object.Raw)
		if err != nil {
			return hookback.Errored(http.StatusBadRequest, err)
		}
		return hookback.Patched("", hookback.Add(path, value))
	})
	return admissionhttp.NewHandler(hookback.Webhook{Name: "bench", Handler: h}, admissionhttp.Options{Observer: server.NewMetrics()})
}

func controllerRuntimeHandler() http.Handler {
	discardControllerRuntimeLogs()
	h := admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		path, value, err := labelOp(req.Object.Raw)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		return admission.Patched("", jsonpatch.JsonPatchOperation{Operation: "add", Path: path, Value: value})
	})
	return &admission.Webhook{Handler: h}
}

// discardControllerRuntimeLogs gives controller-runtime a logger, as every
// program using it does (kubebuilder's main sets one): one that costs nothing.
// Without it, controller-runtime's delegating logger keeps every per-request
// WithValues until a logger is set or 30 s have passed
// (kubernetes-sigs/controller-runtime#1122, #1444), and the reference would be
// measured leaking.
func discardControllerRuntimeLogs() { crlog.SetLogger(logr.Discard()) }

func fixture(b *testing.B, name string) []byte {
	body, err := os.ReadFile("../../testdata/admission/" + name)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

func serve(b *testing.B, h http.Handler, body []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/mutate?timeout=10s", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"patch"`)) {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
		}
	}
}

func BenchmarkAdmission(b *testing.B) {
	for _, f := range []string{"pod-create.v1.json", "pod-create.v1beta1.json", "pod-large.v1.json"} {
		body := fixture(b, f)
		b.Run("hookback/"+f, func(b *testing.B) { serve(b, hookbackHandler(), body) })
		b.Run("controller-runtime/"+f, func(b *testing.B) { serve(b, controllerRuntimeHandler(), body) })
	}
}
