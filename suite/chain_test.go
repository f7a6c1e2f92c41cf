package suite

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/upstream"
)

// reviewServer is a webhook server over HTTP: each path answers with
// answer, and the objects each path was sent are kept.
type reviewServer struct {
	mu   sync.Mutex
	seen map[string][]map[string]any
	srv  *httptest.Server
}

// answer says what a path answers to an object: a denial message, or
// the JSON patch operations (none: allowed unchanged).
type answer func(obj map[string]any) (deny string, patch []map[string]any)

func newReviewServer(t *testing.T, answers map[string]answer) *reviewServer {
	t.Helper()
	s := &reviewServer{seen: map[string][]map[string]any{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rv struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID    string         `json:"uid"`
				Kind   map[string]any `json:"kind"`
				Object map[string]any `json:"object"`
			} `json:"request"`
		}
		if err := json.NewDecoder(r.Body).Decode(&rv); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.seen[r.URL.Path] = append(s.seen[r.URL.Path], rv.Request.Object)
		s.mu.Unlock()
		deny, ops := answers[r.URL.Path](rv.Request.Object)
		resp := map[string]any{"uid": rv.Request.UID, "allowed": deny == ""}
		if deny != "" {
			resp["status"] = map[string]any{"code": 403, "message": deny}
		} else if len(ops) > 0 {
			b, _ := json.Marshal(ops)
			resp["patchType"], resp["patch"] = "JSONPatch", b
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": rv.APIVersion, "kind": "AdmissionReview", "response": resp})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *reviewServer) forwarder(t *testing.T, path string) *upstream.Forwarder {
	t.Helper()
	base, _ := url.Parse(s.srv.URL)
	f, err := upstream.New(upstream.Options{Base: base}, path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (s *reviewServer) objects(path string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[path]
}

func labelsOf(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	return l
}

// addLabel patches a label in, making the labels map when there is none.
func addLabel(key, value string) answer {
	return func(obj map[string]any) (string, []map[string]any) {
		if labelsOf(obj) == nil {
			return "", []map[string]any{{"op": "add", "path": "/metadata/labels", "value": map[string]any{key: value}}}
		}
		return "", []map[string]any{{"op": "add", "path": "/metadata/labels/" + key, "value": value}}
	}
}

// TestChainPassesPatchesOn: mutating webhooks are called in the
// apiserver's order (configurations by name, webhooks in order within
// one), each with the object the ones before it patched, and the
// validating webhook sees the final object; each row is judged against
// its webhook's expectation.
func TestChainPassesPatchesOn(t *testing.T) {
	s := newReviewServer(t, map[string]answer{
		"/first": addLabel("order", "first"),
		"/second": func(obj map[string]any) (string, []map[string]any) {
			return addLabel("after", labelsOf(obj)["order"].(string))(obj)
		},
		"/third": addLabel("third", "yes"),
		"/check": func(obj map[string]any) (string, []map[string]any) {
			if l := labelsOf(obj); l["order"] != "first" || l["after"] != "first" || l["third"] != "yes" {
				return "not every mutation was seen", nil
			}
			return "", nil
		},
	})
	mut := func(conf, name, path string) *Webhook {
		return &Webhook{Configuration: conf, Path: path, Handler: s.forwarder(t, path), Mutating: &admissionregistrationv1.MutatingWebhook{
			Name: name, Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}}
	}
	// Given out of order: the validating one first, configuration "b"
	// before "a"; within "a", first before third.
	hooks := []*Webhook{
		{Configuration: "v", Path: "/check", Handler: s.forwarder(t, "/check"), Validating: &admissionregistrationv1.ValidatingWebhook{
			Name: "check.example.com", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
		mut("b-second", "second.example.com", "/second"),
		mut("a-first", "first.example.com", "/first"),
		mut("a-first", "third.example.com", "/third"),
	}
	for _, tc := range []struct {
		name, webhooks string
	}{
		{"every matching webhook", ""},
		{"webhooks named out of order", "  webhooks: [check.example.com, second.example.com, third.example.com, first.example.com]\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeSuite(t, header+`
- name: chain
`+tc.webhooks+`  operation: CREATE
  namespace: y
  object: `+pod("p", "")+`
  expect: {result: allowed}
  expectWebhooks:
    first.example.com:
      result: patched
      object: `+pod("p", "order: first")+`
    third.example.com:
      result: patched
      object: `+pod("p", "order: first, third: \"yes\"")+`
    second.example.com:
      result: patched
      patch: [{op: add, path: /metadata/labels/after, value: first}]
`)
			files, err := Load([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			rows := Run(context.Background(), files, Options{Webhooks: hooks})
			var got []string
			for _, r := range rows {
				got = append(got, r.Webhook+" "+r.Status)
				if r.Status != Pass {
					t.Errorf("%s: %s\n%s", r.Webhook, r.Detail, r.Diff)
				}
			}
			want := "first.example.com PASS,third.example.com PASS,second.example.com PASS,check.example.com PASS"
			if strings.Join(got, ",") != want {
				t.Errorf("rows %s, want %s", strings.Join(got, ","), want)
			}
		})
	}
	if seen := s.objects("/check"); len(seen) != 2 || labelsOf(seen[0])["after"] != "first" {
		t.Errorf("the validating webhook saw %v", seen)
	}
}

// TestChainFromARecordedReview: a review sent as it is (a recording) is
// chained too: the second webhook gets the first one's patch in the
// review's object.
func TestChainFromARecordedReview(t *testing.T) {
	s := newReviewServer(t, map[string]answer{"/a": addLabel("a", "1"), "/b": addLabel("b", "2")})
	hooks := []*Webhook{
		{Configuration: "2", Path: "/b", Handler: s.forwarder(t, "/b"), Mutating: &admissionregistrationv1.MutatingWebhook{Name: "b", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "1", Path: "/a", Handler: s.forwarder(t, "/a"), Mutating: &admissionregistrationv1.MutatingWebhook{Name: "a", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
	}
	path := writeSuite(t, header+`
- name: recorded
  review:
    apiVersion: admission.k8s.io/v1
    kind: AdmissionReview
    request:
      uid: 0b4e6f5e-0000-4000-8000-000000000001
      kind: {group: "", version: v1, kind: Pod}
      resource: {group: "", version: v1, resource: pods}
      name: p
      namespace: y
      operation: CREATE
      userInfo: {username: alice}
      object: `+pod("p", "")+`
  expect:
    result: patched
    object: `+pod("p", "a: \"1\", b: \"2\"")+`
  expectWebhooks:
    a: {result: patched, object: `+pod("p", "a: \"1\"")+`}
`)
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Run(context.Background(), files, Options{Webhooks: hooks, Idempotence: IdempotenceOff}) {
		if r.Status != Pass {
			t.Errorf("%s %s: %s\n%s", r.Webhook, r.Status, r.Detail, r.Diff)
		}
	}
	if seen := s.objects("/b"); len(seen) != 1 || labelsOf(seen[0])["a"] != "1" {
		t.Errorf("b saw %v, want a's label", seen)
	}
}

// TestChainOrder: mutating policies, then mutating configurations by
// name (webhooks in order within one), then validating webhooks in the
// order given.
func TestChainOrder(t *testing.T) {
	m := func(conf, name string, policy bool) picked {
		return picked{w: &Webhook{Configuration: conf, Policy: policy, Mutating: &admissionregistrationv1.MutatingWebhook{Name: name}}}
	}
	v := func(conf, name string) picked {
		return picked{w: &Webhook{Configuration: conf, Validating: &admissionregistrationv1.ValidatingWebhook{Name: name}}}
	}
	in := []picked{v("z", "v1"), m("c", "c1", false), m("a", "a1", false), v("a", "v2"), m("MutatingAdmissionPolicy", "p", true), m("a", "a2", false), m("B", "b1", false)}
	var got []string
	for _, p := range chainOrder(in) {
		got = append(got, p.w.Name())
	}
	if want := "p,b1,a1,a2,c1,v1,v2"; strings.Join(got, ",") != want {
		t.Errorf("order %s, want %s", strings.Join(got, ","), want)
	}
}

// TestChainMatchesThePatchedObject: whether a webhook is called is decided
// in its turn, on the object as the mutating webhooks before it left it,
// as the apiserver's dispatchers decide: a validating webhook selecting
// tier=web is called for a pod a mutating webhook labels so, and not for
// one it leaves alone.
func TestChainMatchesThePatchedObject(t *testing.T) {
	s := newReviewServer(t, map[string]answer{
		"/tier": func(obj map[string]any) (string, []map[string]any) {
			if md, _ := obj["metadata"].(map[string]any); md["name"] == "web" {
				return addLabel("tier", "web")(obj)
			}
			return "", nil
		},
		"/web-only": func(map[string]any) (string, []map[string]any) { return "", nil },
	})
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	hooks := []*Webhook{
		{Configuration: "v", Path: "/web-only", Handler: s.forwarder(t, "/web-only"), Validating: &admissionregistrationv1.ValidatingWebhook{
			Name: "web-only.example.com", Rules: podRules(), ObjectSelector: web, AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "m", Path: "/tier", Handler: s.forwarder(t, "/tier"), Mutating: &admissionregistrationv1.MutatingWebhook{
			Name: "tier.example.com", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
	}
	path := writeSuite(t, header+`
- name: labelled-web
  operation: CREATE
  namespace: y
  object: `+pod("web", "")+`
  expect: {result: allowed}
  expectWebhooks:
    tier.example.com: {result: patched, object: `+pod("web", "tier: web")+`}
- name: left-alone
  operation: CREATE
  namespace: y
  object: `+pod("db", "")+`
  expect: {result: allowed}
`)
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range Run(context.Background(), files, Options{Webhooks: hooks, Concurrency: 1}) {
		got = append(got, r.Case+" "+r.Webhook+" "+r.Status)
	}
	want := "labelled-web tier.example.com PASS,labelled-web web-only.example.com PASS,left-alone tier.example.com PASS"
	if strings.Join(got, ",") != want {
		t.Errorf("rows %s, want %s", strings.Join(got, ","), want)
	}
	if n := len(s.objects("/web-only")); n != 1 {
		t.Errorf("web-only was called %d times, want once (for the pod labelled web)", n)
	}
}
