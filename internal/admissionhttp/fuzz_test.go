package admissionhttp

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hookback/hookback/admission"
)

// FuzzTransport: whatever body arrives, the transport answers with a
// documented status and never panics; a 200 is always an AdmissionReview.
func FuzzTransport(f *testing.F) {
	for _, name := range []string{"pod-create.v1.json", "pod-create.v1beta1.json", "garbage.json", "no-request.v1.json", "wrong-version.json", "wrong-kind.json"} {
		f.Add(fixture(f, name))
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"object":[1,2]}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":{"metadata":{"labels":null}}}}`))
	h := NewHandler(admission.Webhook{Name: "fuzz", Handler: labelPod}, Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/x", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			if !bytes.Contains(rec.Body.Bytes(), []byte(`"kind":"AdmissionReview"`)) {
				t.Fatalf("200 without an AdmissionReview: %s", rec.Body.Bytes())
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}
