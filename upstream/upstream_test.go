package upstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/internal/syncbuf"
)

const object = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"b"}},"spec":{"containers":[{"name":"c"}]}}`

func request(version string) admission.Request {
	raw, _ := json.Marshal(map[string]any{"apiVersion": version, "kind": "AdmissionReview",
		"request": map[string]any{"uid": "u1", "object": json.RawMessage(object)}})
	req, err := admission.NewRequest(raw)
	if err != nil {
		panic(err) // the fixture above is a valid review
	}
	req.Timeout = 2 * time.Second
	return req
}

func answer(version string, resp map[string]any) string {
	b, _ := json.Marshal(map[string]any{"apiVersion": version, "kind": "AdmissionReview", "response": resp})
	return string(b)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestForwarder(t *testing.T) {
	const v1, v1beta1 = "admission.k8s.io/v1", "admission.k8s.io/v1beta1"
	tests := []struct {
		name, version string
		status        int
		body          string
		wantAllowed   bool
		wantFailed    string // the call fails (HTTP 500 to the apiserver) with this
		wantPatchOps  int
	}{
		{name: "allowed v1", version: v1, body: answer(v1, map[string]any{"uid": "u1", "allowed": true}), wantAllowed: true},
		{name: "denied v1beta1", version: v1beta1, body: answer(v1beta1, map[string]any{"uid": "u1", "allowed": false, "status": map[string]any{"message": "no"}})},
		{name: "patched", version: v1, body: answer(v1, map[string]any{"uid": "u1", "allowed": true, "patchType": "JSONPatch",
			"patch": b64(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`)}), wantAllowed: true, wantPatchOps: 1},
		{name: "wrong uid", version: v1, body: answer(v1, map[string]any{"uid": "u2", "allowed": true}), wantFailed: `upstream answered uid "u2" for request "u1"`},
		{name: "not json", version: v1, body: "<html>", wantFailed: `upstream answer is not an AdmissionReview: invalid character '<' looking for beginning of value (answer: "<html>")`},
		// An answer that echoes the review (a Secret's) is never quoted.
		{name: "broken json not quoted", version: v1, body: `{"apiVersion":"admission.k8s.io/v1","request":{"object":{"data":{"password":"aHVudGVyMg=="}}}`,
			wantFailed: "(answer: 93 bytes of JSON, not shown: they may hold the object)"},
		{name: "http 500 with json not quoted", version: v1, status: 500, body: `{"data":{"password":"aHVudGVyMg=="}}`,
			wantFailed: "upstream answered HTTP 500: 36 bytes of JSON, not shown"},
		{name: "http 500", version: v1, status: 500, body: "boom", wantFailed: `upstream answered HTTP 500: "boom"`},
		{name: "other version", version: v1, body: answer(v1beta1, map[string]any{"uid": "u1", "allowed": true}),
			wantFailed: "upstream answered admission.k8s.io/v1beta1 to an admission.k8s.io/v1 review"},
		{name: "no response", version: v1, body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, wantFailed: "no response"},
		{name: "patch without patchType", version: v1, body: answer(v1, map[string]any{"uid": "u1", "allowed": true,
			"patch": b64(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`)}), wantFailed: "without patchType JSONPatch"},
		{name: "patch that does not apply", version: v1, body: answer(v1, map[string]any{"uid": "u1", "allowed": true, "patchType": "JSONPatch",
			"patch": b64(`[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"add","path":"/spec/containers/9","value":{}}]`)}),
			wantFailed: "patch op 2: path /spec/containers/9"},
		{name: "several ops applied at once", version: v1, body: answer(v1, map[string]any{"uid": "u1", "allowed": true, "patchType": "JSONPatch",
			"patch": b64(`[{"op":"add","path":"/metadata/labels/x","value":"y"},{"op":"replace","path":"/metadata/labels/x","value":"z"},{"op":"remove","path":"/metadata/labels/a"}]`)}),
			wantAllowed: true, wantPatchOps: 3},
		// The apiserver decodes answers case-sensitively: "UID" is no uid.
		{name: "field names in the wrong case", version: v1, body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"UID":"u1","Allowed":true}}`,
			wantFailed: `upstream answered uid "" for request "u1"`},
		{name: "response in the wrong case", version: v1, body: `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","Response":{"uid":"u1","allowed":true}}`,
			wantFailed: "no response"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotBody, gotQuery string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				gotBody, gotQuery = string(b), r.URL.RawQuery
				if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			base, _ := url.Parse(srv.URL)
			f, err := New(Options{Base: base}, "/validate?x=1")
			if err != nil {
				t.Fatal(err)
			}
			req := request(tc.version)
			resp := f.Handle(context.Background(), req)
			if gotBody != string(req.Review()) || gotQuery != "x=1&timeout=2s" {
				t.Errorf("upstream got body identical %v, query %q; want the review unchanged and x=1&timeout=2s", gotBody == string(req.Review()), gotQuery)
			}
			if tc.wantFailed != "" {
				if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.wantFailed) {
					t.Fatalf("response %+v, want a failed call with %q", resp.Result, tc.wantFailed)
				}
				return
			}
			var ops []json.RawMessage
			if len(resp.Patch) > 0 {
				if err := json.Unmarshal(resp.Patch, &ops); err != nil {
					t.Fatal(err)
				}
			}
			if resp.Allowed != tc.wantAllowed || len(ops) != tc.wantPatchOps {
				t.Errorf("response allowed=%v ops=%d, want allowed=%v ops=%d", resp.Allowed, len(ops), tc.wantAllowed, tc.wantPatchOps)
			}
		})
	}
}

func TestForwarderTransportFailures(t *testing.T) {
	closed := closedAddr(t)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does net/http notice the client
		// hanging up and end r's context.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer tlsSrv.Close()
	tests := []struct{ name, base, want string }{
		{name: "connection refused", base: "http://" + closed, want: "nothing listens on " + closed + ": is your webhook running?"},
		{name: "too slow", base: slow.URL, want: "did not answer within the webhook's timeoutSeconds"},
		{name: "unknown certificate authority", base: tlsSrv.URL, want: "pass --upstream-ca"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := url.Parse(tc.base)
			f, err := New(Options{Base: base}, "/")
			if err != nil {
				t.Fatal(err)
			}
			// Only the slow case is about the deadline: the others get
			// one a loaded machine cannot miss.
			timeout := 10 * time.Second
			if tc.name == "too slow" {
				timeout = 300 * time.Millisecond
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			resp := f.Handle(ctx, request("admission.k8s.io/v1"))
			if resp.Allowed || !strings.Contains(resp.Result.Message, tc.want) {
				t.Errorf("message %q, want %q", resp.Result.Message, tc.want)
			}
			if tc.name != "too slow" {
				if err := (Options{Base: base}).Probe(context.Background()); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Probe = %v, want %q", err, tc.want)
				}
			}
		})
	}
	base, _ := url.Parse(slow.URL)
	if err := (Options{Base: base}).Probe(context.Background()); err != nil {
		t.Errorf("Probe of a listening upstream = %v", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	parse := func(s string) *url.URL { u, _ := url.Parse(s); return u }
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{name: "loopback insecure", opts: Options{Base: parse("https://127.0.0.1:9443"), Insecure: true}},
		{name: "localhost insecure", opts: Options{Base: parse("https://localhost:9443"), Insecure: true}},
		{name: "remote insecure", opts: Options{Base: parse("https://10.0.0.1:9443"), Insecure: true}, want: "only accepted for a loopback upstream"},
		{name: "not http", opts: Options{Base: parse("ftp://127.0.0.1")}, want: "want an http or https URL"},
		{name: "missing CA file", opts: Options{Base: parse("https://127.0.0.1"), CAFile: "/nonexistent/ca.pem"}, want: "read upstream.Options.CAFile: "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzCheckAnswer: no answer an upstream can send makes the checks panic.
// A denial without a status is legal (the apiserver shows a generic
// message), so only a failed check must carry a message.
func FuzzCheckAnswer(f *testing.F) {
	f.Add([]byte(answer("admission.k8s.io/v1", map[string]any{"uid": "u1", "allowed": true})))
	f.Add([]byte(answer("admission.k8s.io/v1", map[string]any{"uid": "u1", "allowed": true, "patchType": "JSONPatch", "patch": b64(`[{"op":"remove","path":"/a/b/0"}]`)})))
	f.Add([]byte(`{"response":null}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := Check(request("admission.k8s.io/v1"), body)
		if r.Result != nil && r.Result.Code == http.StatusInternalServerError && r.Result.Message == "" {
			t.Fatalf("a failed check without a message for %q", body)
		}
	})
}

// TestForwarderReportsItsWait: the admission log line shows the upstream's
// time apart from hookback's own, as the forwarder reports it.
func TestForwarderReportsItsWait(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond) // the upstream's own work, measured below
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(answer("admission.k8s.io/v1", map[string]any{"uid": "u1", "allowed": true})))
	}))
	defer up.Close()
	base, _ := url.Parse(up.URL)
	f, err := New(Options{Base: base}, "/v")
	if err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	h := admissionhttp.NewHandler(admission.Webhook{Name: "up", Path: "/v", Handler: f}, admissionhttp.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	review := request("admission.k8s.io/v1")
	req := httptest.NewRequest(http.MethodPost, "/v", bytes.NewReader(review.Review()))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		t.Fatalf("code %d: %s", w.Code, w.Body.String())
	}
	if !regexp.MustCompile(`upstream=[1-9][0-9.]*m?s own=`).MatchString(logs.String()) {
		t.Errorf("log line lacks the upstream's time: %s", logs.String())
	}
}

// closedAddr is a loopback address that nothing listens on: the upstream
// that is down.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
