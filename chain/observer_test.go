package chain

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/hookback/hookback/admission"
)

func readReview(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "admission", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func post(h http.Handler, contentType string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, PathFirst, bytes.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// outcomes is an admission.Observer that keeps what it was told.
type outcomes struct {
	mu  sync.Mutex
	got []string
}

func (o *outcomes) Observe(webhook, decision string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, webhook+" "+decision)
}

// TestObserverAnswers: an observer allows with no patch, echoing the uid in
// the review's version, however the review orders its members; what the
// apiserver sends (kind, apiVersion, request.uid first) included.
func TestObserverAnswers(t *testing.T) {
	reordered := `{"request":{"kind":{"group":"","version":"v1","kind":"Pod"},"object":{"metadata":{"name":"a"}},"uid":"u-2"},` +
		`"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`
	asSent := `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u-3","object":{"metadata":{"name":"a"}}}}`
	escaped := `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u-\"4\u00e9"}}`
	for _, tc := range []struct {
		name, version, uid string
		review             []byte
	}{
		{"v1 review", "admission.k8s.io/v1", "705ab4f5-6393-11e8-b7cc-42010a800002", readReview(t, "pod-create.v1.json")},
		{"v1beta1 review", "admission.k8s.io/v1beta1", "11111111-2222-3333-4444-555555555555", readReview(t, "pod-create.v1beta1.json")},
		{"request before apiVersion and kind", "admission.k8s.io/v1", "u-2", []byte(reordered)},
		{"the apiserver's order", "admission.k8s.io/v1", "u-3", []byte(asSent)},
		{"a uid with escapes", "admission.k8s.io/v1", "u-\"4é", []byte(escaped)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(&Joiner{}, CollectorOptions{})
			obs := &outcomes{}
			w := post(c.Handlers(obs)[PathValidating], "application/json", tc.review)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, content type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			var got admissionv1.AdmissionReview
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer %s: %v", w.Body, err)
			}
			r := got.Response
			if got.APIVersion != tc.version || got.Kind != "AdmissionReview" || r == nil || string(r.UID) != tc.uid || !r.Allowed || r.Patch != nil || r.PatchType != nil {
				t.Errorf("answer %s: want %s allowing uid %q with no patch", w.Body, tc.version, tc.uid)
			}
			if _, _, v := c.Calls(); v != 1 || strings.Join(obs.got, ",") != "chain-validating allowed" {
				t.Errorf("calls %d, outcomes %v: want one call, allowed", v, obs.got)
			}
		})
	}
}

// TestObserverRejects: what is not a review gets the admission transport's
// clear status and message, and counts as no call.
func TestObserverRejects(t *testing.T) {
	big := append([]byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"u","object":"`), bytes.Repeat([]byte("x"), 2048)...)
	big = append(big, `"}}`...)
	for _, tc := range []struct {
		name, method, contentType string
		body                      []byte
		code                      int
		message                   string
	}{
		{"GET", http.MethodGet, "application/json", nil, http.StatusMethodNotAllowed, "admission reviews are POSTed"},
		{"not JSON", http.MethodPost, "text/plain", []byte(`{}`), http.StatusUnsupportedMediaType, `content type "text/plain" not supported`},
		{"empty body", http.MethodPost, "application/json", nil, http.StatusBadRequest, "empty body"},
		{"garbage", http.MethodPost, "application/json", readReview(t, "garbage.json"), http.StatusBadRequest, "decode AdmissionReview"},
		{"no request", http.MethodPost, "application/json", readReview(t, "no-request.v1.json"), http.StatusBadRequest, "no uid"},
		{"null request", http.MethodPost, "application/json", []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":null}`), http.StatusBadRequest, "has no request"},
		{"empty uid", http.MethodPost, "application/json", []byte(`{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":""}}`), http.StatusBadRequest, "no uid"},
		{"wrong version", http.MethodPost, "application/json", readReview(t, "wrong-version.json"), http.StatusBadRequest, `unsupported apiVersion "admission.k8s.io/v2"`},
		{"wrong kind", http.MethodPost, "application/json", readReview(t, "wrong-kind.json"), http.StatusBadRequest, "unsupported kind"},
		{"too big", http.MethodPost, "application/json", big, http.StatusRequestEntityTooLarge, "request body larger than 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(&Joiner{}, CollectorOptions{MaxBodyBytes: 1024})
			obs := &outcomes{}
			r := httptest.NewRequest(tc.method, PathFirst, bytes.NewReader(tc.body))
			r.Header.Set("Content-Type", tc.contentType)
			w := httptest.NewRecorder()
			c.Handlers(obs)[PathFirst].ServeHTTP(w, r)
			if w.Code != tc.code || !strings.Contains(w.Body.String(), tc.message) {
				t.Errorf("got %d %q, want %d with %q", w.Code, w.Body, tc.code, tc.message)
			}
			if f, _, _ := c.Calls(); f != 0 || strings.Join(obs.got, ",") != "chain-first bad_request" {
				t.Errorf("calls %d, outcomes %v: want no call, one bad_request", f, obs.got)
			}
		})
	}
}

// TestObserverJoins: the observers' views and your webhook's, made off the
// answers by Run, are joined into the request's chain in the apiserver's
// order.
func TestObserverJoins(t *testing.T) {
	done := make(chan *Chain, 1)
	c := NewCollector(&Joiner{Done: func(ch *Chain) { done <- ch }}, CollectorOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); c.Run(ctx) }()
	defer func() { cancel(); <-stopped }()

	review := readReview(t, "pod-create.v1.json")
	patch := []byte(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`)
	mine := c.Wrap(admission.Webhook{Name: "mine", Path: "/mutate", Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		resp := admission.Allowed("")
		resp.Patch = patch
		return resp
	})})
	c.SetYours(map[string]bool{"/mutate": true})
	hs := c.Handlers(nil)
	yours := admission.NewHTTPHandler(mine, admission.HTTPOptions{})
	for _, h := range []http.Handler{hs[PathFirst], yours, hs[PathLast], hs[PathValidating]} {
		if w := post(h, "application/json", review); w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	select {
	case ch := <-done:
		if ch.Submitted == nil || len(ch.Yours) != 1 || len(ch.After) != 1 || ch.Final == nil || ch.Ambiguous {
			t.Fatalf("chain %+v: want submitted, yours, after, final", ch)
		}
		want := Identity{Operation: "CREATE", Resource: "pods", Namespace: "default", Name: "web-0", User: "admin"}
		if ch.Identity != want {
			t.Errorf("identity %+v, want %+v", ch.Identity, want)
		}
		if y := ch.Yours[0]; y.Webhook != "mine" || y.Path != "/mutate" || string(y.Patch) != string(patch) || len(y.Object) == 0 {
			t.Errorf("your view %+v: want mine at /mutate with its patch and the object", y)
		}
		if ch.Submitted.Webhook != "chain-first" || ch.Final.Webhook != "chain-validating" || ch.Submitted.Kind != "/v1, Kind=Pod" || len(ch.Final.Object) == 0 {
			t.Errorf("observers' views %+v, %+v: want chain-first's and chain-validating's, with the object", ch.Submitted, ch.Final)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no chain done within 10 s")
	}
	if n := c.Dropped(); n != 0 {
		t.Errorf("%d views dropped, want none", n)
	}
}

// TestObserverDropsWhenBehind: with nothing joining the views, the
// observers still answer at once; what finds the queue full is dropped and
// counted, never waited for.
func TestObserverDropsWhenBehind(t *testing.T) {
	c := NewCollector(&Joiner{}, CollectorOptions{})
	h := c.Handlers(nil)[PathFirst]
	review := readReview(t, "pod-create.v1.json")
	for i := range queueLen + 10 {
		if w := post(h, "application/json", review); w.Code != http.StatusOK {
			t.Fatalf("call %d: status %d", i, w.Code)
		}
	}
	if n := c.Dropped(); n != 10 {
		t.Errorf("%d views dropped, want the 10 beyond the queue's %d", n, queueLen)
	}
	if f, _, _ := c.Calls(); f != queueLen+10 {
		t.Errorf("%d calls counted, want every one answered (%d)", f, queueLen+10)
	}
}
