package inspector

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/record"
)

// fill admits a denied, a patched and an allowed pod, and a Secret.
func fill(f *fixture) {
	f.admit(podReview("u-bad", "team-a", "bad-pod"))
	f.admit(podReview("u-patch", "team-b", "patch-pod"))
	f.admit(podReview("u-ok", "team-a", "ok-pod"))
	f.admit(secretReview("u-secret", "team-b", "db-credentials"))
}

func TestList(t *testing.T) {
	tests := []struct {
		name    string
		query   string
		want    []string // in this order
		wantNot []string
	}{
		{name: "all, newest first", want: []string{"db-credentials", "ok-pod", "patch-pod", "bad-pod"}},
		{name: "by decision", query: "?decision=denied", want: []string{"bad-pod", "pod name is bad"}, wantNot: []string{"ok-pod", "patch-pod"}},
		{name: "patched shows the op count", query: "?decision=patched", want: []string{"patch-pod", "1 op"}, wantNot: []string{"bad-pod"}},
		{name: "by namespace", query: "?namespace=team-b", want: []string{"db-credentials", "patch-pod"}, wantNot: []string{"bad-pod", "ok-pod"}},
		{name: "by webhook", query: "?webhook=nobody", wantNot: []string{"bad-pod", "patch-pod"}},
	}
	f := newFixture(t, StoreOptions{})
	fill(f)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.get("/" + tt.query)
			if code != http.StatusOK {
				t.Fatalf("GET / = %d", code)
			}
			at := 0
			for _, w := range tt.want {
				i := strings.Index(body[at:], w)
				if i < 0 {
					t.Fatalf("%q missing (or out of order) in the list:\n%s", w, body)
				}
				at += i
			}
			rows := body[strings.Index(body, `<tbody id="rows">`):]
			for _, w := range tt.wantNot {
				if strings.Contains(rows, w) {
					t.Errorf("%q listed", w)
				}
			}
		})
	}
}

func TestDetail(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	fill(f)
	tests := []struct {
		name    string
		id      uint64
		want    []string
		wantNot []string
	}{
		{name: "denied", id: 1, want: []string{"pod name is bad", "bad-pod", "alice", "Download", "Replay to test-hook"}, wantNot: []string{"No answer was sent", `class="diff"`}},
		{name: "patched: ops, diff and warnings", id: 2, want: []string{"Patch: 1 operation", "/metadata/labels", `{&#34;seen&#34;:&#34;yes&#34;}`,
			`class="diff"`, `<tr class="add">`, "labelled"}},
		{name: "a Secret is redacted", id: 4, want: []string{"&lt;redacted by hookback&gt;", "data is redacted: the inspector never keeps it"}, wantNot: []string{secretData}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := f.get(fmt.Sprintf("/reviews/%d", tt.id))
			if code != http.StatusOK {
				t.Fatalf("detail = %d: %s", code, body)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("%q missing in:\n%s", w, body)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(body, w) {
					t.Errorf("%q shown", w)
				}
			}
		})
	}
	if code, _ := f.get("/reviews/99"); code != http.StatusNotFound {
		t.Errorf("a review never kept = %d, want 404", code)
	}
}

func TestDownloadIsWhatReplayReads(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	fill(f)
	resp, err := http.Get(f.http.URL + "/reviews/2/entry.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "attachment") {
		t.Errorf("Content-Disposition = %q", cd)
	}
	var e record.Entry
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if e.Webhook != testHook.Name || e.Path != testHook.Path || !bytes.Contains(e.Review, []byte("patch-pod")) {
		t.Errorf("entry = %s %s %s", e.Webhook, e.Path, e.Review)
	}
	// hookback replay --upstream reads it and finds the same answer.
	var out bytes.Buffer
	target := func(record.Entry) (http.Handler, error) {
		return admissionhttp.NewHandler(testHook, admissionhttp.Options{}), nil
	}
	changed, err := record.Replay(context.Background(), []record.NamedEntry{{File: "x", Entry: e}}, target, &out)
	if err != nil || changed != 0 {
		t.Errorf("replay of the download: %d changed, %v: %s", changed, err, out.String())
	}
}

func TestReplay(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	fill(f)
	post := func(path string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, f.http.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	tests := []struct {
		name     string
		path     string
		hdr      map[string]string
		before   func()
		wantCode int
		want     string
	}{
		{name: "same answer: unchanged", path: "/reviews/2/replay", hdr: map[string]string{"X-Hookback-Fragment": "1"}, wantCode: 200, want: "<strong>unchanged</strong>"},
		{name: "a page without the script", path: "/reviews/1/replay", wantCode: 200, want: "Replay of review 1"},
		{name: "changed answer is explained", path: "/reviews/3/replay", wantCode: 200, want: "allowed true -&gt; false",
			before: func() {
				// Review 3 was allowed; the webhook now denies it.
				f.store.rewriteAnswer(t, 3, func(a []byte) []byte {
					return bytes.Replace(a, []byte(`"allowed":false`), []byte(`"allowed":true`), 1)
				})
				f.srv.opts.Replay = func(record.Entry) (http.Handler, error) {
					deny := admission.Webhook{Name: "d", Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Denied("now no") })}
					return admissionhttp.NewHandler(deny, admissionhttp.Options{}), nil
				}
			}},
		{name: "cross-origin refused", path: "/reviews/2/replay", hdr: map[string]string{"Origin": "http://evil.example"}, wantCode: 403},
		{name: "cross-site refused", path: "/reviews/2/replay", hdr: map[string]string{"Sec-Fetch-Site": "cross-site"}, wantCode: 403},
		{name: "unknown review", path: "/reviews/77/replay", wantCode: 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
			}
			code, body := post(tt.path, tt.hdr)
			if code != tt.wantCode || !strings.Contains(body, tt.want) {
				t.Errorf("POST %s = %d, want %d with %q:\n%s", tt.path, code, tt.wantCode, tt.want, body)
			}
		})
	}
}

// A page asked for under a foreign name (DNS rebinding) is refused.
func TestGuardHost(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	tests := []struct {
		host string
		want int
	}{
		{"127.0.0.1:8082", 200}, {"localhost:8082", 200}, {"[::1]:8082", 200}, {"evil.example:8082", 421}, {"10.0.0.1", 421},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.Host = tt.host
			w := httptest.NewRecorder()
			f.srv.Handler().ServeHTTP(w, req)
			if w.Code != tt.want {
				t.Errorf("Host %s = %d, want %d", tt.host, w.Code, tt.want)
			}
			if tt.want == 200 && !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'self'") {
				t.Error("no Content-Security-Policy")
			}
		})
	}
}

func TestAssetsAreEmbedded(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	for _, p := range []string{"/assets/app.js", "/assets/style.css"} {
		if code, body := f.get(p); code != 200 || len(body) < 100 {
			t.Errorf("GET %s = %d (%d bytes)", p, code, len(body))
		}
	}
	_, page := f.get("/")
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page refers to another origin")
	}
}

func TestStream(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	f.admit(podReview("u0", "team-a", "old-pod"))
	tests := []struct {
		name   string
		path   string
		hdr    map[string]string
		admit  []string // pod names, in team-a unless prefixed ns/
		wantID string
		want   string
	}{
		{name: "new rows only", path: "/stream?after=1", admit: []string{"new-pod"}, wantID: "2", want: "team-a/new-pod"},
		{name: "filtered", path: "/stream?after=2&decision=denied", admit: []string{"fine-pod", "bad-one"}, wantID: "4", want: "pod name is bad"},
		{name: "a reconnecting browser resumes", path: "/stream?after=0", hdr: map[string]string{"Last-Event-ID": "4"},
			admit: []string{"team-c/later-pod"}, wantID: "5", want: "team-c/later-pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStream(t, f.http.URL+tt.path, tt.hdr)
			for _, n := range tt.admit {
				ns, name, ok := strings.Cut(n, "/")
				if !ok {
					ns, name = "team-a", n
				}
				f.admit(podReview("u-"+name, ns, name))
			}
			id, data := s.next(t)
			if id != tt.wantID || !strings.Contains(data, tt.want) || !strings.HasPrefix(data, "<tr") {
				t.Errorf("event %s: %s, want id %s with %q", id, data, tt.wantID, tt.want)
			}
		})
	}
}

// Stopping the server ends open streams at once.
func TestStartStopsWithOpenStreams(t *testing.T) {
	store := NewStore(StoreOptions{})
	srv, err := New(Options{Address: "127.0.0.1:0", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Start(ctx) }()
	s := openStream(t, srv.URL()+"stream", nil)
	_, _ = s.r.ReadString('\n') // the retry line: connected
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Start = %v", err)
		}
		if d := time.Since(start); d > 900*time.Millisecond {
			t.Errorf("stopping took %s", d)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Start did not return")
	}
}

func TestNewRefusesExposureUnlessAsked(t *testing.T) {
	tests := []struct {
		name    string
		address string
		expose  bool
		wantErr bool
	}{
		{name: "loopback", address: "127.0.0.1:0"},
		{name: "localhost", address: "localhost:0"},
		{name: "every interface", address: ":0", wantErr: true},
		{name: "every interface, exposed", address: ":0", expose: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := New(Options{Address: tt.address, Expose: tt.expose, Store: NewStore(StoreOptions{})})
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%s) = %v", tt.address, err)
			}
			if srv != nil {
				srv.ln.Close()
			}
		})
	}
}

// The Events a webhook recorded while deciding show on its review's page.
func TestDetailShowsEvents(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	rec := f.store.Tap(testHook.Name, &events.FakeRecorder{})
	tapped := admission.HandlerFunc(func(ctx context.Context, req admission.Request) admission.Response {
		rec.Eventf(&corev1.ObjectReference{Kind: "Pod", Namespace: req.Namespace, Name: req.Name}, nil,
			corev1.EventTypeWarning, "SidecarSkipped", "InjectSidecar", "missing annotation %s", "xxl-agent/job-name")
		return admission.Allowed("")
	})
	f.serve = admissionhttp.NewHandler(admission.Webhook{Name: testHook.Name, Path: testHook.Path, Handler: tapped},
		admissionhttp.Options{Recorder: f.store})
	f.admit(podReview("u-ev", "team-a", "ev-pod"))
	_, body := f.get(fmt.Sprintf("/reviews/%d", f.lastID()))
	for _, want := range []string{"<strong>Warning</strong> SidecarSkipped (InjectSidecar) on Pod team-a/ev-pod: missing annotation xxl-agent/job-name"} {
		if !strings.Contains(body, want) {
			t.Errorf("%q missing in:\n%s", want, body)
		}
	}
}

// TestListPages: a page shows pageRows reviews, newest first, and links the
// older ones, filters kept; an older page is not live and links back.
func TestListPages(t *testing.T) {
	f := newFixture(t, StoreOptions{})
	for i := range pageRows + 30 {
		f.admit(podReview(fmt.Sprintf("u-%d", i), "team-a", fmt.Sprintf("pod-%d", i)))
	}
	count := func(body string) int { return strings.Count(body, `<tr class="review`) }
	code, first := f.get("/?namespace=team-a")
	if code != http.StatusOK || count(first) != pageRows {
		t.Fatalf("first page: %d, %d rows, want %d", code, count(first), pageRows)
	}
	if !strings.Contains(first, fmt.Sprintf("pod-%d<", pageRows+29)) || strings.Contains(first, "pod-29<") {
		t.Errorf("the first page is not the newest %d", pageRows)
	}
	m := regexp.MustCompile(`id="older" href="([^"]+)"`).FindStringSubmatch(first)
	if m == nil || !strings.Contains(m[1], "namespace=team-a") || !strings.Contains(first, `data-live="true"`) {
		t.Fatalf("first page: no older link with the filter, or not live:\n%s", first)
	}
	code, older := f.get(html.UnescapeString(m[1]))
	if code != http.StatusOK || count(older) != 30 || !strings.Contains(older, "pod-29<") || !strings.Contains(older, "pod-0<") {
		t.Fatalf("older page: %d, %d rows, want pod-29 down to pod-0", code, count(older))
	}
	if !strings.Contains(older, `data-live="false"`) || !strings.Contains(older, `id="older" href="/?before=0&amp;namespace=team-a" hidden`) ||
		!strings.Contains(older, `href="/?namespace=team-a">Newest reviews (live)`) {
		t.Errorf("older page: live, or its links are wrong:\n%s", older[strings.Index(older, "<nav"):])
	}
}
