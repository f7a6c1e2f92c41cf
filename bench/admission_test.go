package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/hookback/hookback/server"
)

// Both servers run the same decision: decode the pod, add one label, answer
// with a JSON patch computed from the diff.
func labelled(raw []byte) (*corev1.Pod, error) {
	var pod corev1.Pod
	if err := json.Unmarshal(raw, &pod); err != nil {
		return nil, err
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["bench"] = "yes"
	return &pod, nil
}

func hookbackHandler() http.Handler {
	h := server.HandlerFunc(func(_ context.Context, req server.Request) server.Response {
		pod, err := labelled(req.Object.Raw)
		if err != nil {
			return server.Errored(http.StatusBadRequest, err)
		}
		return server.Patched("", req.Object.Raw, pod)
	})
	return server.NewAdmissionHandler("bench", h, slog.New(slog.DiscardHandler), server.NewMetrics())
}

func controllerRuntimeHandler() http.Handler {
	h := admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		pod, err := labelled(req.Object.Raw)
		if err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		b, err := json.Marshal(pod)
		if err != nil {
			return admission.Errored(http.StatusInternalServerError, err)
		}
		return admission.PatchResponseFromRaw(req.Object.Raw, b)
	})
	return &admission.Webhook{Handler: h}
}

func fixture(b *testing.B, name string) []byte {
	body, err := os.ReadFile("../testdata/admission/" + name)
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
