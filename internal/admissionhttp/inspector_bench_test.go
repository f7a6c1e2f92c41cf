package admissionhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/admissionhttp"
)

// BenchmarkInspectorCost is the transport serving a review that is decoded
// and patched, bare and with the inspector's store attached as the recorder
// (no page open): what the inspector adds to every admission.
// docs/performance.md reports it.
func BenchmarkInspectorCost(b *testing.B) {
	label := admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		var pod corev1.Pod
		if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
			return admission.Errored(http.StatusBadRequest, err)
		}
		return admission.Patched("", admission.SetKeyOp("/metadata/labels", len(pod.Labels) > 0, "seen", "yes"))
	})
	hook := admission.Webhook{Name: "bench", Path: "/bench", Handler: label}
	for _, fx := range []string{"pod-create.v1.json", "pod-large.v1.json"} {
		body, err := os.ReadFile(filepath.Join("..", "..", "testdata", "admission", fx))
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			rec  admissionhttp.Recorder
		}{
			{name: "bare"},
			{name: "inspector", rec: inspector.NewStore(inspector.StoreOptions{})},
		} {
			b.Run("review="+strings.TrimSuffix(fx, ".v1.json")+"/recorder="+tc.name, func(b *testing.B) {
				h := admissionhttp.NewHandler(hook, admissionhttp.Options{Recorder: tc.rec})
				b.ReportAllocs()
				b.SetBytes(int64(len(body)))
				for b.Loop() {
					req := httptest.NewRequest(http.MethodPost, hook.Path, bytes.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					w := httptest.NewRecorder()
					h.ServeHTTP(w, req)
					if w.Code != http.StatusOK {
						b.Fatal(w.Code)
					}
				}
			})
		}
	}
}
