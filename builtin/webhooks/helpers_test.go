package webhooks

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
)

// fixtureDir holds one directory of AdmissionReview fixtures per webhook.
var fixtureDir = filepath.Join("..", "..", "testdata", "webhook")

// loadRequest reads a whole AdmissionReview fixture (admission.k8s.io/v1 or
// v1beta1: their JSON shapes are the same, as the transport relies on) and
// returns its request as a handler sees it.
func loadRequest(t *testing.T, webhook, fixture string) admission.Request {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, webhook, fixture+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &review); err != nil {
		t.Fatalf("fixture %s/%s: %v", webhook, fixture, err)
	}
	wantVersion := strings.SplitN(fixture, "-", 2)[0]
	switch gv := review.APIVersion; {
	case gv == admissionv1.SchemeGroupVersion.String() && wantVersion == "v1":
	case gv == admissionv1beta1.SchemeGroupVersion.String() && wantVersion == "v1beta1":
	default:
		t.Fatalf("fixture %s/%s: apiVersion %q does not match its name", webhook, fixture, gv)
	}
	if review.Kind != "AdmissionReview" || review.Request == nil {
		t.Fatalf("fixture %s/%s: not an AdmissionReview with a request", webhook, fixture)
	}
	return admission.Request{AdmissionRequest: *review.Request}
}

// testDeps returns Deps whose recorder is a fake that keeps every event, and
// which remembers the webhook names it was asked for.
func testDeps(pods ...*corev1.Pod) (Deps, *events.FakeRecorder, *[]string) {
	fake := events.NewFakeRecorder(100)
	var asked []string
	return Deps{
		Log: slog.New(slog.DiscardHandler),
		Recorder: func(name string) events.EventRecorder {
			asked = append(asked, name)
			return fake
		},
		Pods: podLister(pods...),
	}, fake, &asked
}

// podLister serves pods from an informer indexer, as a started shared
// informer factory's lister would.
func podLister(pods ...*corev1.Pod) corev1listers.PodLister {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			panic(err)
		}
	}
	return corev1listers.NewPodLister(idx)
}

// buildOne builds a single webhook through Build, the way main wires it.
func buildOne(t *testing.T, name string, opts Options, deps Deps) admission.Handler {
	t.Helper()
	hooks, err := Build([]string{name}, opts, deps)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooks) != 1 || hooks[0].Name != name {
		t.Fatalf("Build(%q) = %v", name, hooks)
	}
	return hooks[0].Handler
}

// drain returns the events recorded so far.
func drain(rec *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// checkDecision asserts allowed and, when wantMsg is set, the message.
func checkDecision(t *testing.T, resp admission.Response, wantAllowed bool, wantCode int32, wantMsg string) {
	t.Helper()
	if resp.Allowed != wantAllowed {
		t.Errorf("allowed = %v, want %v (result %+v)", resp.Allowed, wantAllowed, resp.Result)
	}
	if resp.Result == nil {
		t.Fatal("response has no result")
	}
	if resp.Result.Code != wantCode {
		t.Errorf("code = %d, want %d", resp.Result.Code, wantCode)
	}
	if wantMsg != "" && resp.Result.Message != wantMsg {
		t.Errorf("message = %q, want %q", resp.Result.Message, wantMsg)
	}
}

// patchOp is one RFC 6902 operation as admission.Patched writes them.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	Value json.RawMessage `json:"value,omitempty"`
}

// patchedPod applies resp's patch to the request's pod, as the apiserver
// would, and decodes the result.
func patchedPod(t *testing.T, req admission.Request, resp admission.Response) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	decodeInto(t, applyPatch(t, req.Object.Raw, resp.Patch), pod)
	return pod
}

func decodeInto(t *testing.T, data []byte, obj runtime.Object) {
	t.Helper()
	if err := json.Unmarshal(data, obj); err != nil {
		t.Fatalf("decode patched object: %v", err)
	}
}

// patchPaths lists the paths resp's patch touches, to prove a handler
// changed only what it meant to (no churn from re-encoding the object).
func patchPaths(t *testing.T, patch []byte) []string {
	t.Helper()
	var ops []patchOp
	if len(patch) > 0 {
		if err := json.Unmarshal(patch, &ops); err != nil {
			t.Fatalf("decode patch: %v", err)
		}
	}
	paths := make([]string, len(ops))
	for i, op := range ops {
		paths[i] = op.Op + " " + op.Path
	}
	return paths
}

// applyPatch applies a JSON patch with the implementation the apiserver
// vendors. No patch returns doc unchanged.
func applyPatch(t *testing.T, doc, patch []byte) []byte {
	t.Helper()
	if len(patch) == 0 {
		return doc
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatalf("decode patch %s: %v", patch, err)
	}
	out, err := p.Apply(doc)
	if err != nil {
		t.Fatalf("apply patch %s: %v", patch, err)
	}
	return out
}
