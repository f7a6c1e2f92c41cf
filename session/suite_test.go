package session

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/plan"
)

// answering is an upstream that allows every review with a message
// naming itself and the path it was called at.
func answering(t *testing.T, name string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			APIVersion string               `json:"apiVersion"`
			Request    struct{ UID string } `json:"request"`
		}
		_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&review)
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": review.APIVersion, "kind": "AdmissionReview",
			"response": map[string]any{"uid": review.Request.UID, "allowed": true, "status": map[string]any{"message": name + " " + r.URL.Path}}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRecordedUpstreams: without manifests, a recorded case goes to the
// upstream mapped to the Service its path names, else the default one, at
// the path the webhook had in the cluster; a path of hookback's own
// webhooks is no upstream's.
func TestRecordedUpstreams(t *testing.T) {
	u := plan.UserWebhooks{Upstreams: []plan.Upstream{{Service: "acme/mapped", URL: answering(t, "mapped")}, {URL: answering(t, "default")}}}
	forward := recordedUpstreams(u, nil)
	review := []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","operation":"CREATE",` +
		`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"name":"p","namespace":"a",` +
		`"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}}}`)
	tests := []struct{ path, want string }{
		{path: "/upstream/svc/acme/mapped/443/validate", want: "mapped /validate"},
		{path: "/upstream/svc/acme/other/443/mutate-pods", want: "default /mutate-pods"},
		{path: "/upstream/url/webhook.example.com/443/check", want: "default /check"},
		{path: "/validate-pod-name", want: "error: path /validate-pod-name is no webhook of yours that hookback forwarded"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			h, err := forward(tt.path)
			if err != nil {
				if got := "error: " + err.Error(); !strings.HasPrefix(got, tt.want) {
					t.Errorf("%s, want %s", got, tt.want)
				}
				return
			}
			req, err := admission.NewRequest(review)
			if err != nil {
				t.Fatal(err)
			}
			resp := h.Handle(context.Background(), req)
			if resp.Result == nil || resp.Result.Message != tt.want {
				t.Errorf("answer %+v, want the message %q", resp, tt.want)
			}
		})
	}
}
