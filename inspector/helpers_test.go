package inspector

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/record"
)

// review builds an AdmissionReview v1 for a CREATE of obj (a JSON object).
func review(uid, namespace, name, kind, resource, obj string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":%q,`+
		`"kind":{"group":"","version":"v1","kind":%q},"resource":{"group":"","version":"v1","resource":%q},`+
		`"name":%q,"namespace":%q,"operation":"CREATE","userInfo":{"username":"alice"},"object":%s,"dryRun":false}}`,
		uid, kind, resource, name, namespace, obj))
}

func podReview(uid, namespace, name string) []byte {
	return review(uid, namespace, name, "Pod", "pods",
		fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"namespace":%q},"spec":{"containers":[{"name":"web","image":"nginx"}]}}`, name, namespace))
}

const secretData = "c3VwZXItc2VjcmV0LXZhbHVl" // super-secret-value

func secretReview(uid, namespace, name string) []byte {
	return review(uid, namespace, name, "Secret", "secrets",
		fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q,"namespace":%q},"data":{"password":%q}}`, name, namespace, secretData))
}

// decide is the test webhook: it denies pods named bad-*, labels pods
// named patch-* and allows the rest.
var decide = admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
	switch {
	case strings.HasPrefix(req.Name, "bad-"):
		return admission.Denied("pod name is bad")
	case strings.HasPrefix(req.Name, "patch-"):
		return admission.Patched("", admission.Add("/metadata/labels", map[string]string{"seen": "yes"})).WithWarnings("labelled")
	}
	return admission.Allowed("")
})

var testHook = admission.Webhook{Name: "test-hook", Path: "/test", Handler: decide}

// fixture is a store fed through the real transport, and a server over it.
type fixture struct {
	t     *testing.T
	store *Store
	srv   *Server
	http  *httptest.Server
	serve http.Handler
}

func newFixture(t *testing.T, opts StoreOptions) *fixture {
	t.Helper()
	store := NewStore(opts)
	srv, err := New(Options{Address: "127.0.0.1:0", Store: store, Sources: map[string]string{testHook.Name: SourceBuiltIn},
		Replay: func(record.Entry) (http.Handler, error) {
			return admissionhttp.NewHandler(testHook, admissionhttp.Options{}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.ln.Close() })
	f := &fixture{t: t, store: store, srv: srv, serve: admissionhttp.NewHandler(testHook, admissionhttp.Options{Recorder: store})}
	f.http = httptest.NewServer(srv.Handler())
	t.Cleanup(f.http.Close)
	return f
}

// admit sends a review through the transport that feeds the store.
func (f *fixture) admit(body []byte) {
	f.t.Helper()
	req := httptest.NewRequest(http.MethodPost, testHook.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	f.serve.ServeHTTP(w, req)
	if w.Code != http.StatusOK {
		f.t.Fatalf("admission answered %d: %s", w.Code, w.Body)
	}
}

// get fetches path and returns status and body.
func (f *fixture) get(path string) (int, string) {
	f.t.Helper()
	resp, err := http.Get(f.http.URL + path)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func (f *fixture) lastID() uint64 {
	all := f.store.kept()
	if len(all) == 0 {
		f.t.Fatal("the store is empty")
	}
	return all[len(all)-1].id
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rewriteAnswer replaces kept review id's answer in place (the store has
// no such operation: kept reviews never change); the new answer must not
// be longer.
func (s *Store) rewriteAnswer(t *testing.T, id uint64, rewrite func([]byte) []byte) {
	t.Helper()
	e := s.get(id)
	if e == nil {
		t.Fatalf("review %d is not kept", id)
	}
	_, answer := e.bodies()
	answer = rewrite(answer)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(answer) > e.answerLen {
		t.Fatalf("rewritten answer of review %d is longer", id)
	}
	copy(s.arena.slice(e.off+e.reviewLen, len(answer)), answer)
	s.bytes -= int64(e.answerLen - len(answer))
	e.answerLen = len(answer)
}

// kept is every entry the store keeps, oldest first.
func (s *Store) kept() []*entry {
	all, _ := s.since(0)
	return all
}

// sse reads server-sent events.
type sse struct {
	r    *bufio.Reader
	body interface{ Close() error }
}

func openStream(t *testing.T, url string, hdr map[string]string) *sse {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q", ct)
	}
	return &sse{r: bufio.NewReader(resp.Body), body: resp.Body}
}

// next returns the next event's id and data, or fails after 2s.
func (s *sse) next(t *testing.T) (id, data string) {
	t.Helper()
	_, id, data = s.nextEvent(t)
	return id, data
}

// nextEvent returns the next event's name, id and data, or fails after 2s.
func (s *sse) nextEvent(t *testing.T) (event, id, data string) {
	t.Helper()
	type ev struct{ event, id, data string }
	got := make(chan ev, 1)
	go func() {
		var e ev
		for {
			line, err := s.r.ReadString('\n')
			if err != nil {
				close(got)
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "id: "):
				e.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				e.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				e.data += line[6:]
			case line == "" && e.id != "":
				got <- e
				return
			}
		}
	}()
	select {
	case e, ok := <-got:
		if !ok {
			t.Fatal("stream closed")
		}
		return e.event, e.id, e.data
	case <-time.After(2 * time.Second):
		t.Fatal("no event within 2s")
	}
	return "", "", ""
}
