package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

type converterFunc func(context.Context, Request) Answer

func (f converterFunc) Convert(ctx context.Context, r Request) Answer { return f(ctx, r) }

func review(version string) []byte {
	b, _ := json.Marshal(map[string]any{"apiVersion": version, "kind": "ConversionReview", "request": map[string]any{
		"uid": "u1", "desiredAPIVersion": "example.com/v1",
		"objects": []any{map[string]any{"apiVersion": "example.com/v2", "kind": "Widget",
			"metadata": map[string]any{"name": "a", "namespace": "ns", "uid": "o1"}, "spec": map[string]any{"secret": "s3cr3t"}}}}})
	return b
}

func TestHandler(t *testing.T) {
	tests := []struct {
		name, version, failure string
		answer                 []byte
		wantResult             string
		wantInBody             string
	}{
		{name: "v1 passes the answer", version: V1, answer: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Success"}}}`),
			wantResult: "success", wantInBody: `"status":"Success"`},
		{name: "v1beta1 failure answered in v1beta1", version: V1beta1, failure: "nothing listens on 127.0.0.1:9443: is your webhook running?",
			wantResult: "errored", wantInBody: `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Failure","message":"nothing listens on 127.0.0.1:9443: is your webhook running?"}}}`},
		{name: "upstream's own failure", version: V1, answer: []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u1","result":{"status":"Failure","message":"no"}}}`),
			wantResult: "failure", wantInBody: `"message":"no"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			m, err := NewMetrics(reg)
			if err != nil {
				t.Fatal(err)
			}
			var got Request
			h := NewHTTPHandler(Webhook{CRD: "widgets.example.com", Path: "/convert/widgets.example.com", Converter: converterFunc(func(_ context.Context, r Request) Answer {
				got = r
				return Answer{Body: tt.answer, Failure: tt.failure}
			})}, Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Metrics: m})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert/widgets.example.com?timeout=30s", bytes.NewReader(review(tt.version))))
			if rec.Code != 200 || !strings.Contains(rec.Body.String(), tt.wantInBody) {
				t.Fatalf("answer %d %s, want 200 with %s", rec.Code, rec.Body, tt.wantInBody)
			}
			if got.ReviewVersion != tt.version || got.UID != "u1" || len(got.Objects) != 1 || got.Objects[0].Ref() != "ns/a" || got.Timeout.String() != "30s" {
				t.Errorf("converter got %+v", got)
			}
			var d dto.Metric
			if err := m.reviews.WithLabelValues("widgets.example.com", tt.wantResult).Write(&d); err != nil || d.GetCounter().GetValue() != 1 {
				n := d.GetCounter().GetValue()
				t.Errorf("reviews{result=%s} = %v, want 1", tt.wantResult, n)
			}
			line := logs.String()
			if !strings.Contains(line, "msg=conversion crd=widgets.example.com desired_api_version=example.com/v1 from=example.com/v2 objects=1 result="+tt.wantResult) {
				t.Errorf("log %q: want one conversion line", line)
			}
			if strings.Contains(line, "s3cr3t") {
				t.Errorf("log %q holds the object", line)
			}
		})
	}
}

func TestHandlerRefuses(t *testing.T) {
	tests := []struct {
		name, method, body, want string
		code                     int
	}{
		{name: "get", method: http.MethodGet, code: 405, want: "conversion reviews are POSTed"},
		{name: "empty", method: http.MethodPost, code: 400, want: "empty body"},
		{name: "admission review", method: http.MethodPost, body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, code: 400, want: `unsupported apiVersion "admission.k8s.io/v1"`},
		{name: "no uid", method: http.MethodPost, body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"desiredAPIVersion":"x/v1"}}`, code: 400, want: "no uid"},
		{name: "no desired version", method: http.MethodPost, body: `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u"}}`, code: 400, want: "no desiredAPIVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHTTPHandler(Webhook{CRD: "w", Converter: converterFunc(func(context.Context, Request) Answer {
				t.Error("converter called")
				return Answer{}
			})}, Options{})
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, "/convert/w", strings.NewReader(tt.body)))
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.want) {
				t.Fatalf("answer %d %q, want %d with %q", rec.Code, rec.Body, tt.code, tt.want)
			}
		})
	}
}
