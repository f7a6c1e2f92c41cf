package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/record"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/*.golden.yaml")

// counting is a handler that denies names starting with deny-, labels
// others, and counts its calls.
type counting struct{ calls atomic.Int64 }

func (c *counting) Handle(_ context.Context, req admission.Request) admission.Response {
	c.calls.Add(1)
	if strings.HasPrefix(req.Name, "deny-") {
		return admission.Denied("no to " + req.Name)
	}
	r := admission.Allowed("")
	r.Patch = []byte(`[{"op":"add","path":"/metadata/labels","value":{"seen":"yes"}}]`)
	return r
}

func podRules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}
}

// testWebhooks: a validating webhook for namespaces labelled team=a, one
// for objects labelled tier=web, and a mutating one whose matchCondition
// admits only alice's requests.
func testWebhooks(h admission.Handler) []*Webhook {
	return []*Webhook{
		{Configuration: "v", Path: "/ns", Handler: h, Validating: &admissionregistrationv1.ValidatingWebhook{Name: "ns.example.com", Rules: podRules(),
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "v", Path: "/obj", Handler: h, Validating: &admissionregistrationv1.ValidatingWebhook{Name: "obj.example.com", Rules: podRules(),
			ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}, AdmissionReviewVersions: []string{"v1beta1"}}},
		{Configuration: "m", Path: "/alice", Handler: h, Mutating: &admissionregistrationv1.MutatingWebhook{Name: "alice.example.com", Rules: podRules(),
			MatchConditions:         []admissionregistrationv1.MatchCondition{{Name: "alice", Expression: "request.userInfo.username == 'alice'"}},
			AdmissionReviewVersions: []string{"v1"}}},
	}
}

func writeSuite(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "suite.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const header = "apiVersion: hookback.dev/v1alpha1\nkind: Suite\ncases:\n"

func pod(name, labels string) string {
	return `{apiVersion: v1, kind: Pod, metadata: {name: ` + name + `, labels: {` + labels + `}}, spec: {containers: [{name: a, image: b}]}}`
}

func TestRunPicksWebhooksAsTheApiserver(t *testing.T) {
	h := &counting{}
	path := writeSuite(t, header+`
- name: team-a
  operation: CREATE
  namespace: x
  namespaceLabels: {team: a}
  object: `+pod("deny-1", "")+`
  expect: {result: denied, message: no to deny-1}
- name: web-tier
  operation: UPDATE
  namespace: y
  object: `+pod("deny-2", "tier: web")+`
  oldObject: `+pod("deny-2", "")+`
  expect: {result: denied, code: 403}
- name: alice
  operation: CREATE
  namespace: y
  userInfo: {username: alice}
  object: `+pod("p", "")+`
  expect:
    result: patched
    object: `+pod("p", "seen: \"yes\"")+`
- name: bob-nobody
  operation: CREATE
  namespace: y
  userInfo: {username: bob}
  object: `+pod("p", "")+`
  expect: {result: skip}
`)
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rows := Run(context.Background(), files, Options{Webhooks: testWebhooks(h), Idempotence: IdempotenceOff})
	var got []string
	for _, r := range rows {
		got = append(got, r.Case+" "+r.Webhook+" "+r.Status)
	}
	want := []string{"team-a ns.example.com PASS", "web-tier obj.example.com PASS", "alice alice.example.com PASS", "bob-nobody - PASS"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := h.calls.Load(); n != 3 {
		t.Errorf("handler called %d times, want 3", n)
	}
}

func TestUpdateLeavesPassingCasesByteForByte(t *testing.T) {
	h := &counting{}
	first := `# keep this comment
- name: passes
  webhooks: [ns.example.com]
  operation: CREATE
  object: ` + pod("deny-1", "") + `
  expect: {result: denied, message: no to deny-1}   # and this one
`
	middle := `- name: fails
  webhooks: [ns.example.com]
  operation: CREATE
  object: ` + pod("ok", "") + `
  expect:
    result: allowed
  description: the expectation is older than the webhook
`
	last := `
- name: passes-too
  webhooks: [ns.example.com]
  operation: CREATE
  object: {apiVersion: v1, kind: Pod, metadata: {name: deny-3}}
  expect: {result: denied}
`
	path := writeSuite(t, header+first+middle+last)
	files, err := Load([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	rows := Run(context.Background(), files, Options{Webhooks: testWebhooks(h)})
	if c := Count(rows); c.Failed != 1 {
		t.Fatalf("counts %+v, want one failure", c)
	}
	var out bytes.Buffer
	if n, err := Update(rows, &out); err != nil || n != 1 {
		t.Fatalf("Update = %d, %v", n, err)
	}
	if !strings.Contains(out.String(), "updated "+path+":") || !strings.Contains(out.String(), "result: want allowed, got patched") {
		t.Errorf("Update printed:\n%s", out.String())
	}
	b, _ := os.ReadFile(path)
	text := string(b)
	if !strings.HasPrefix(text, header+first) || !strings.HasSuffix(text, "  description: the expectation is older than the webhook\n"+last) {
		t.Errorf("the passing cases or the rest of the failing one changed:\n%s", text)
	}
	files, err = Load([]string{path})
	if err != nil {
		t.Fatalf("the updated file does not load: %v\n%s", err, text)
	}
	if c := Count(Run(context.Background(), files, Options{Webhooks: testWebhooks(h)})); c.Passed != 3 {
		t.Errorf("after --update: %+v\n%s", c, text)
	}
}

func TestJUnitHasASuitePerFile(t *testing.T) {
	rows := []Row{
		{File: "a.yaml", Case: "one", Webhook: "w", Status: Pass},
		{File: "a.yaml", Case: "two", Webhook: "w", Status: Fail, Detail: "allowed", Diff: "result: want denied, got allowed"},
		{File: "b.yaml", Case: "three", Webhook: "-", Status: Erred, Detail: "record r.json: no such file"},
	}
	var buf bytes.Buffer
	if err := report.Write(&buf, report.FormatJUnit, Report(rows)); err != nil {
		t.Fatal(err)
	}
	var got report.JUnit
	if err := xml.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Suites) != 2 || got.Tests != 3 || got.Failures != 1 || got.Errors != 1 {
		t.Fatalf("junit %+v", got)
	}
	if f := got.Suites[0].Cases[1].Failure; f == nil || f.Text != "result: want denied, got allowed" {
		t.Errorf("failure = %+v", f)
	}
}

// TestCaseFromEntry: a recorded review and its answer become a case that
// passes against the same answer, and the file is what the schema takes.
func TestCaseFromEntry(t *testing.T) {
	review, err := os.ReadFile(filepath.Join("..", "testdata", "webhook", "pod-lifespan", "v1-create-3.json"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := admission.NewRequest(review)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := json.Marshal(map[string]any{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": map[string]any{
		"uid": req.UID, "allowed": true, "patchType": "JSONPatch",
		"patch": []byte(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`)}})
	cf, err := CaseFromEntry(record.Entry{Webhook: "pod-lifespan.hookback.dev", Path: "/mutate-pod-lifespan",
		ConfigurationKind: MutatingWebhookConfiguration, Review: review, Answer: answer})
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "case-from-entry.golden.yaml")
	if *updateGolden {
		if err := os.WriteFile(golden, cf.Body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil || !bytes.Equal(want, cf.Body) {
		t.Errorf("case differs from %s (go test -update-golden): %v\n%s", golden, err, cf.Body)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, cf.Name), cf.Body, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	h := admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		r := admission.Allowed("")
		r.Patch = []byte(`[{"op":"add","path":"/metadata/labels/seen","value":"yes"}]`)
		return r
	})
	w := &Webhook{Configuration: "m", Path: "/mutate-pod-lifespan", Handler: h, Mutating: &admissionregistrationv1.MutatingWebhook{Name: "pod-lifespan.hookback.dev"}}
	rows := Run(context.Background(), files, Options{Webhooks: []*Webhook{w}})
	if len(rows) != 1 || rows[0].Status != Pass {
		t.Errorf("rows %+v", rows)
	}
}
