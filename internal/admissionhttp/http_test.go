package admissionhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/hookback/hookback/admission"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "admission", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// labelPod adds a label, to exercise admission.Patched end to end.
var labelPod = admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	return admission.Patched("", admission.SetKeyOp("/metadata/labels", len(pod.Labels) > 0, "seen", "yes"))
})

func TestAdmissionHTTP(t *testing.T) {
	deny := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Denied("no way") })
	boom := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { panic("boom") })
	tests := []struct {
		name        string
		handler     admission.Handler
		method      string
		contentType string
		body        []byte
		wantCode    int
		wantText    string // in the plain-text error for non-200
		wantVersion string
		wantUID     string
		wantAllowed bool
		wantPatch   bool
		wantMessage string
	}{
		{name: "v1 patched", handler: labelPod, body: fixture(t, "pod-create.v1.json"), wantCode: 200,
			wantVersion: "admission.k8s.io/v1", wantUID: "705ab4f5-6393-11e8-b7cc-42010a800002", wantAllowed: true, wantPatch: true},
		{name: "v1beta1 answered in v1beta1", handler: labelPod, body: fixture(t, "pod-create.v1beta1.json"), wantCode: 200,
			wantVersion: "admission.k8s.io/v1beta1", wantUID: "11111111-2222-3333-4444-555555555555", wantAllowed: true, wantPatch: true},
		{name: "denied keeps 200 and carries the message", handler: deny, body: fixture(t, "pod-create.v1.json"), wantCode: 200,
			wantVersion: "admission.k8s.io/v1", wantUID: "705ab4f5-6393-11e8-b7cc-42010a800002", wantMessage: "no way"},
		{name: "panicking handler is an internal error", handler: boom, body: fixture(t, "pod-create.v1.json"), wantCode: 200,
			wantVersion: "admission.k8s.io/v1", wantUID: "705ab4f5-6393-11e8-b7cc-42010a800002", wantMessage: "internal error in webhook test"},
		{name: "content type with charset", handler: labelPod, contentType: "application/json; charset=utf-8", body: fixture(t, "pod-create.v1.json"),
			wantCode: 200, wantVersion: "admission.k8s.io/v1", wantUID: "705ab4f5-6393-11e8-b7cc-42010a800002", wantAllowed: true, wantPatch: true},
		{name: "GET", handler: labelPod, method: http.MethodGet, wantCode: 405, wantText: "POST"},
		{name: "wrong content type", handler: labelPod, contentType: "application/yaml", body: fixture(t, "pod-create.v1.json"), wantCode: 415, wantText: "application/json"},
		{name: "empty body", handler: labelPod, body: nil, wantCode: 400, wantText: "empty body"},
		{name: "garbage JSON", handler: labelPod, body: fixture(t, "garbage.json"), wantCode: 400, wantText: "decode AdmissionReview"},
		{name: "missing request", handler: labelPod, body: fixture(t, "no-request.v1.json"), wantCode: 400, wantText: "no request"},
		{name: "unknown version", handler: labelPod, body: fixture(t, "wrong-version.json"), wantCode: 400, wantText: "unsupported apiVersion"},
		{name: "wrong kind", handler: labelPod, body: fixture(t, "wrong-kind.json"), wantCode: 400, wantText: "unsupported kind"},
		{name: "oversized body", handler: labelPod, body: bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1), wantCode: 413, wantText: "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := NewHandler(admission.Webhook{Name: "test", Handler: tc.handler}, Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
			method, ct := tc.method, tc.contentType
			if method == "" {
				method = http.MethodPost
			}
			if ct == "" {
				ct = "application/json"
			}
			req := httptest.NewRequest(method, "/x?timeout=10s", bytes.NewReader(tc.body))
			req.Header.Set("Content-Type", ct)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			if rec.Code != tc.wantCode {
				t.Fatalf("status = %d, want %d (body %q)", rec.Code, tc.wantCode, body)
			}
			if tc.wantCode != 200 {
				if !strings.Contains(string(body), tc.wantText) {
					t.Errorf("body %q does not contain %q", body, tc.wantText)
				}
				return
			}
			var review admissionv1.AdmissionReview
			if err := json.Unmarshal(body, &review); err != nil {
				t.Fatalf("decode reply: %v", err)
			}
			r := review.Response
			if review.APIVersion != tc.wantVersion || review.Kind != "AdmissionReview" || r == nil || string(r.UID) != tc.wantUID {
				t.Fatalf("reply = %s, want version %s uid %s", body, tc.wantVersion, tc.wantUID)
			}
			if r.Allowed != tc.wantAllowed || (len(r.Patch) > 0) != tc.wantPatch {
				t.Errorf("allowed=%v patch=%q, want allowed=%v patch=%v", r.Allowed, r.Patch, tc.wantAllowed, tc.wantPatch)
			}
			if tc.wantPatch && (r.PatchType == nil || *r.PatchType != admissionv1.PatchTypeJSONPatch) {
				t.Errorf("patchType = %v, want JSONPatch", r.PatchType)
			}
			if tc.wantMessage != "" && (r.Result == nil || !strings.Contains(r.Result.Message, tc.wantMessage)) {
				t.Errorf("result = %+v, want message %q", r.Result, tc.wantMessage)
			}
			if strings.Contains(logs.String(), `"image"`) || strings.Contains(logs.String(), "nginx") {
				t.Errorf("log leaks the object body: %s", logs.String())
			}
		})
	}
}

func BenchmarkAdmissionHTTP(b *testing.B) {
	body := fixture(b, "pod-create.v1.json")
	h := NewHandler(admission.Webhook{Name: "bench", Handler: labelPod}, Options{})
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

type recorded struct{ webhook, review, answer string }

type memRecorder struct{ got []recorded }

func (m *memRecorder) Record(webhook, _ string, review, answer []byte) {
	m.got = append(m.got, recorded{webhook, string(review), string(answer)})
}

// The handler sees the review as received and its version; the recorder
// gets the review and the answer sent; upstream time is logged apart.
func TestAdmissionHTTPRawRecordAndUpstream(t *testing.T) {
	for _, fixtureName := range []string{"pod-create.v1.json", "pod-create.v1beta1.json"} {
		t.Run(fixtureName, func(t *testing.T) {
			body := fixture(t, fixtureName)
			var sawRaw, sawVersion string
			var kept admission.Request
			h := admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
				sawRaw, sawVersion, kept = string(req.Review()), req.ReviewVersion, req
				admission.ReportWait(ctx, 3*time.Millisecond)
				r := admission.Allowed("")
				r.AuditAnnotations = map[string]string{"k": "v"}
				return r
			})
			rec := &memRecorder{}
			var logs bytes.Buffer
			srv := NewHandler(admission.Webhook{Name: "up", Handler: h}, Options{Recorder: rec, Log: slog.New(slog.NewTextHandler(&logs, nil))})
			req := httptest.NewRequest(http.MethodPost, "/x", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			var review struct {
				APIVersion string `json:"apiVersion"`
			}
			if err := json.Unmarshal(body, &review); err != nil {
				t.Fatal(err)
			}
			if sawRaw != string(body) || sawVersion != review.APIVersion {
				t.Errorf("handler saw version %q and a raw body equal to the request: %v", sawVersion, sawRaw == string(body))
			}
			// The bytes are the Request's own: a copy kept past Handle reads them still.
			if b := kept.Review(); string(b) != string(body) {
				t.Errorf("Review after Handle returned: %d bytes, want the review's %d", len(b), len(body))
			}
			if len(rec.got) != 1 || rec.got[0].webhook != "up" || rec.got[0].review != string(body) || rec.got[0].answer != w.Body.String() {
				t.Errorf("recorder got %+v", rec.got)
			}
			if !strings.Contains(w.Body.String(), `"auditAnnotations":{"k":"v"}`) {
				t.Errorf("answer lacks the audit annotations: %s", w.Body.String())
			}
			if !strings.Contains(logs.String(), "upstream=3ms") || !strings.Contains(logs.String(), " own=") {
				t.Errorf("log line lacks upstream and own time: %s", logs.String())
			}
		})
	}
}

type servedRecorder struct {
	memRecorder
	served []Served
}

func (s *servedRecorder) RecordServed(x Served) {
	x.Review, x.Answer = bytes.Clone(x.Review), bytes.Clone(x.Answer)
	s.served = append(s.served, x)
}

// A ServedRecorder gets every answered review with its timing, and the
// failed calls too, instead of Record.
func TestAdmissionHTTPServedRecorder(t *testing.T) {
	tests := []struct {
		name        string
		handler     admission.Handler
		wantCode    int
		wantAnswer  bool
		wantFailure string
	}{
		{name: "answered", handler: admission.HandlerFunc(func(ctx context.Context, _ admission.Request) admission.Response {
			admission.ReportWait(ctx, time.Millisecond)
			return admission.Allowed("")
		}), wantCode: 200, wantAnswer: true},
		{name: "failed call", handler: admission.HandlerFunc(func(ctx context.Context, _ admission.Request) admission.Response {
			admission.ReportWait(ctx, time.Millisecond)
			return admission.CallFailed(errors.New("upstream answered garbage"))
		}), wantCode: 500, wantFailure: "upstream answered garbage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &servedRecorder{}
			body := fixture(t, "pod-create.v1.json")
			h := NewHandler(admission.Webhook{Name: "w", Path: "/w", Handler: tt.handler}, Options{Recorder: rec})
			req := httptest.NewRequest(http.MethodPost, "/w", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			before := time.Now()
			h.ServeHTTP(w, req)
			if w.Code != tt.wantCode {
				t.Fatalf("code = %d", w.Code)
			}
			if len(rec.got) != 0 || len(rec.served) != 1 {
				t.Fatalf("Record called %d times, RecordServed %d", len(rec.got), len(rec.served))
			}
			x := rec.served[0]
			if x.Webhook != "w" || x.Path != "/w" || !bytes.Equal(x.Review, body) || x.Failure != tt.wantFailure ||
				(x.Answer != nil) != tt.wantAnswer || x.Upstream != time.Millisecond || x.Took <= 0 || x.Start.Before(before) {
				t.Errorf("served = %+v", x)
			}
			if tt.wantAnswer && !bytes.Equal(x.Answer, w.Body.Bytes()) {
				t.Errorf("answer %s, sent %s", x.Answer, w.Body.Bytes())
			}
		})
	}
}

func TestTimeoutParam(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		want        time.Duration
	}{
		{"the apiserver's", "timeout=10s", 10 * time.Second},
		{"among others", "a=1&timeout=2500ms&b=2", 2500 * time.Millisecond},
		{"escaped", "timeout=1m%2030s", 0},
		{"escaped duration", "timeout=1%6D", time.Minute},
		{"first wins", "timeout=3s&timeout=4s", 3 * time.Second},
		{"absent", "dryRun=true", 0},
		{"empty query", "", 0},
		{"not a duration", "timeout=soon", 0},
		{"negative", "timeout=-1s", 0},
		{"bad escape", "timeout=%zz", 0},
		{"prefix of another key", "timeouts=5s", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := timeoutParam(tc.query); got != tc.want {
				t.Errorf("timeoutParam(%q) = %v, want %v", tc.query, got, tc.want)
			}
		})
	}
}

func TestIsJSON(t *testing.T) {
	for _, tc := range []struct {
		contentType string
		want        bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/json-patch+json", false},
		{"application/yaml", false},
		{"", false},
		{"application/json; charset", false},
	} {
		t.Run(tc.contentType, func(t *testing.T) {
			if got := isJSON(tc.contentType); got != tc.want {
				t.Errorf("isJSON(%q) = %v, want %v", tc.contentType, got, tc.want)
			}
		})
	}
}

type upstreamObserver struct {
	observed []string
	waited   []time.Duration
	own      []time.Duration
}

func (o *upstreamObserver) Observe(webhook, decision string, _ time.Duration) {
	o.observed = append(o.observed, webhook+" "+decision)
}

func (o *upstreamObserver) ObserveUpstream(_ string, waited, own time.Duration) {
	o.waited, o.own = append(o.waited, waited), append(o.own, own)
}

// An UpstreamObserver is told the wait on another server and hookback's
// own share, only for a webhook that waited on one.
func TestAdmissionHTTPUpstreamObserver(t *testing.T) {
	tests := []struct {
		name       string
		wait       time.Duration
		wantWaited []time.Duration
	}{
		{name: "forwarded", wait: 4 * time.Millisecond, wantWaited: []time.Duration{4 * time.Millisecond}},
		{name: "answered here", wait: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := &upstreamObserver{}
			h := admission.HandlerFunc(func(ctx context.Context, _ admission.Request) admission.Response {
				if tt.wait > 0 {
					admission.ReportWait(ctx, tt.wait)
				}
				return admission.Allowed("")
			})
			srv := NewHandler(admission.Webhook{Name: "w", Handler: h}, Options{Observer: obs})
			req := httptest.NewRequest(http.MethodPost, "/w", bytes.NewReader(fixture(t, "pod-create.v1.json")))
			req.Header.Set("Content-Type", "application/json")
			srv.ServeHTTP(httptest.NewRecorder(), req)
			if len(obs.observed) != 1 || obs.observed[0] != "w allowed" {
				t.Errorf("observed %v, want [w allowed]", obs.observed)
			}
			if !slices.Equal(obs.waited, tt.wantWaited) {
				t.Errorf("waited %v, want %v", obs.waited, tt.wantWaited)
			}
			if len(obs.own) != len(tt.wantWaited) || (len(obs.own) == 1 && obs.own[0] < 0) {
				t.Errorf("own %v: want one share, not negative (the handler reported more wait than it took), per forwarded review", obs.own)
			}
		})
	}
}
