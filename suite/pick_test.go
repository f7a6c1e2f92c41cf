package suite

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/record"
)

// calls notes which handler answered, by the name it was given.
type calls struct {
	mu  sync.Mutex
	got []string
}

func (c *calls) note(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, name)
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// labeller patches a label in, as a mutating webhook; denier denies deny-*
// and allows the rest, as a validating one.
func labeller(c *calls, name string) admission.Handler {
	return admission.HandlerFunc(func(context.Context, admission.Request) admission.Response {
		c.note(name)
		r := admission.Allowed("")
		r.Patch = []byte(`[{"op":"add","path":"/metadata/labels","value":{"seen":"yes"}}]`)
		return r
	})
}

func denier(c *calls, name string) admission.Handler {
	return admission.HandlerFunc(func(_ context.Context, req admission.Request) admission.Response {
		c.note(name)
		if strings.HasPrefix(req.Name, "deny-") {
			return admission.Denied("no to " + req.Name)
		}
		return admission.Allowed("")
	})
}

// sameName: a mutating and a validating webhook that share a name, as
// slackhq/simple-kubernetes-webhook's do, each at its own path.
func sameName(c *calls) []*Webhook {
	return []*Webhook{
		{Configuration: "m-config", Path: "/m", Handler: labeller(c, "mutating"), Mutating: &admissionregistrationv1.MutatingWebhook{
			Name: "same.example.com", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
		{Configuration: "v-config", Path: "/v", Handler: denier(c, "validating"), Validating: &admissionregistrationv1.ValidatingWebhook{
			Name: "same.example.com", Rules: podRules(), AdmissionReviewVersions: []string{"v1"}}},
	}
}

// TestNamedWebhookOfAKind: a case that names a webhook runs the webhook
// of that name in the configuration kind it says, or served at the path
// it was recorded at; a name two kinds share, without a kind, is an error
// that names both.
func TestNamedWebhookOfAKind(t *testing.T) {
	tests := []struct {
		name, fields string
		want         []string // rows: webhook status
		called       []string
		detail       string
	}{
		{name: "an ambiguous name without a kind", fields: "webhooks: [same.example.com]",
			want: []string{"- ERROR"}, detail: `webhook "same.example.com" is in a MutatingWebhookConfiguration (m-config) and in a ValidatingWebhookConfiguration (v-config): ` +
				`a name is unique only within its configuration; set configurationKind to the one the case means (MutatingWebhookConfiguration or ValidatingWebhookConfiguration)`},
		{name: "the mutating one", fields: "webhooks: [same.example.com]\n  configurationKind: MutatingWebhookConfiguration",
			want: []string{"same.example.com PASS"}, called: []string{"mutating"}},
		{name: "the validating one", fields: "webhooks: [same.example.com]\n  configurationKind: ValidatingWebhookConfiguration",
			want: []string{"same.example.com FAIL"}, called: []string{"validating"}},
		{name: "a recorded path, no kind (recorded before kinds were kept)", fields: "webhooks: [same.example.com]\n  path: /v",
			want: []string{"same.example.com FAIL"}, called: []string{"validating"}},
		{name: "a path the manifests moved: the kind decides", fields: "webhooks: [same.example.com]\n  configurationKind: MutatingWebhookConfiguration\n  path: /moved",
			want: []string{"same.example.com PASS"}, called: []string{"mutating"}},
		{name: "named by path", fields: "webhooks: [/m]",
			want: []string{"same.example.com PASS"}, called: []string{"mutating"}},
		{name: "a kind that has no webhook of that name", fields: "webhooks: [same.example.com]\n  configurationKind: ValidatingAdmissionPolicy",
			want: []string{"- ERROR"}, detail: `no ValidatingAdmissionPolicy webhook "same.example.com" among: same.example.com (MutatingWebhookConfiguration), same.example.com (ValidatingWebhookConfiguration)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &calls{}
			path := writeSuite(t, header+`
- name: c
  `+tt.fields+`
  operation: CREATE
  object: `+pod("p", "")+`
  expect:
    result: patched
    object: `+pod("p", `seen: "yes"`)+`
`)
			files, err := Load([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			rows := Run(context.Background(), files, Options{Webhooks: sameName(c), Idempotence: IdempotenceOff})
			if got := rowList(rows); !slices.Equal(got, tt.want) {
				t.Errorf("rows %q, want %q\n%+v", got, tt.want, rows)
			}
			if got := c.list(); !slices.Equal(got, tt.called) {
				t.Errorf("called %q, want %q", got, tt.called)
			}
			if tt.detail != "" && rows[0].Detail != tt.detail {
				t.Errorf("detail\n%s\nwant\n%s", rows[0].Detail, tt.detail)
			}
		})
	}
}

func rowList(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Webhook+" "+r.Status)
	}
	return out
}

// TestRecordedCasesRunTheirWebhook: the cases test init writes from a
// mutating and a validating webhook of one name, and a case that gives
// the recording itself, each run the webhook they came from and pass.
func TestRecordedCasesRunTheirWebhook(t *testing.T) {
	dir := t.TempDir()
	review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-1","kind":{"group":"","version":"v1","kind":"Pod"},` +
		`"resource":{"group":"","version":"v1","resource":"pods"},"name":"deny-p","namespace":"a","operation":"CREATE","userInfo":{"username":"u"},` +
		`"object":` + mustJSON(t, pod("deny-p", "")) + `}}`
	patch := `"W3sib3AiOiJhZGQiLCJwYXRoIjoiL21ldGFkYXRhL2xhYmVscyIsInZhbHVlIjp7InNlZW4iOiJ5ZXMifX1d"`
	entries := []record.NamedEntry{
		{File: "m.json", Entry: record.Entry{Webhook: "same.example.com", Path: "/m", ConfigurationKind: MutatingWebhookConfiguration, Review: []byte(review),
			Answer: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":true,"patchType":"JSONPatch","patch":` + patch + `}}`)}},
		{File: "v.json", Entry: record.Entry{Webhook: "same.example.com", Path: "/v", ConfigurationKind: ValidatingWebhookConfiguration, Review: []byte(review),
			Answer: []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u-1","allowed":false,"status":{"code":403,"message":"no to deny-p"}}}`)}},
	}
	var out strings.Builder
	if rep, err := Init(entries, dir, &out); err != nil || rep.Written != 2 {
		t.Fatalf("Init = %+v, %v", rep, err)
	}
	b, _ := json.Marshal(entries[1].Entry)
	if err := os.WriteFile(filepath.Join(dir, "v.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	doc := header + "- {name: from-the-recording, record: v.json, expect: {result: asRecorded}}\n"
	if err := os.WriteFile(filepath.Join(dir, "record.yaml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Load([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	c := &calls{}
	rows := Run(context.Background(), files, Options{Webhooks: sameName(c), Idempotence: IdempotenceOff})
	if got, want := rowList(rows), []string{"same.example.com PASS", "same.example.com PASS", "same.example.com PASS"}; !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q\n%+v", got, want, rows)
	}
	got := c.list()
	slices.Sort(got)
	if want := []string{"mutating", "validating", "validating"}; !slices.Equal(got, want) {
		t.Errorf("called %q, want %q", got, want)
	}
}

func mustJSON(t *testing.T, y string) string {
	t.Helper()
	files, err := Load([]string{writeSuite(t, header+"- {name: x, operation: CREATE, object: "+y+", expect: {result: allowed}}\n")})
	if err != nil {
		t.Fatal(err)
	}
	return string(files[0].Cases[0].Object)
}

// TestRecordedCasesWithoutManifests: with your server but not its
// manifests, a recorded case goes to your server at the path it was
// recorded at, as the kind it was recorded from; a case that must be
// matched, or names a webhook with no path, says what is missing.
func TestRecordedCasesWithoutManifests(t *testing.T) {
	const at = "/upstream/svc/system/webhook-service/443/mutate"
	tests := []struct {
		name, fields, expect string
		want                 string
		paths                []string
	}{
		{name: "recorded from the mutating webhook", fields: "webhooks: [same.example.com]\n  configurationKind: MutatingWebhookConfiguration\n  path: " + at,
			expect: "{result: patched, object: " + pod("p", `seen: "yes"`) + "}", want: "same.example.com PASS", paths: []string{at}},
		{name: "recorded before kinds were kept", fields: "webhooks: [same.example.com]\n  path: " + at,
			expect: "{result: patched, object: " + pod("p", `seen: "yes"`) + "}", want: "same.example.com PASS", paths: []string{at}},
		{name: "a plain manifest to match", expect: "{result: allowed}", want: "- ERROR: pass the manifests"},
		{name: "a name without a path", fields: "webhooks: [same.example.com]", expect: "{result: allowed}", want: "- ERROR: pass the manifests"},
		{name: "a path nothing serves", fields: "webhooks: [same.example.com]\n  path: /nowhere", expect: "{result: allowed}",
			want: `- ERROR: webhook "same.example.com", recorded at /nowhere: not one of yours`, paths: []string{"/nowhere"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &calls{}
			var paths []string
			var mu sync.Mutex
			recorded := func(path string) (admission.Handler, error) {
				mu.Lock()
				paths = append(paths, path)
				mu.Unlock()
				if path != at {
					return nil, os.ErrNotExist
				}
				return labeller(c, "yours"), nil
			}
			fields := tt.fields
			if fields != "" {
				fields = "\n  " + fields
			}
			files, err := Load([]string{writeSuite(t, header+"- name: c"+fields+"\n  operation: CREATE\n  object: "+pod("p", "")+"\n  expect: "+tt.expect+"\n")})
			if err != nil {
				t.Fatal(err)
			}
			rows := Run(context.Background(), files, Options{Recorded: recorded, Unmatched: "pass the manifests",
				Webhooks: []*Webhook{{Configuration: "builtin", Path: "/b", Handler: denier(c, "builtin"),
					Validating: &admissionregistrationv1.ValidatingWebhook{Name: "builtin", Rules: podRules()}}}})
			if len(rows) != 1 {
				t.Fatalf("rows %+v, want one", rows)
			}
			got := rows[0].Webhook + " " + rows[0].Status
			if rows[0].Status == Erred {
				got += ": " + strings.Replace(rows[0].Detail, os.ErrNotExist.Error(), "not one of yours", 1)
			}
			if got != tt.want {
				t.Errorf("row %q, want %q", got, tt.want)
			}
			if !slices.Equal(paths, tt.paths) {
				t.Errorf("asked for %q, want %q", paths, tt.paths)
			}
			if called := c.list(); slices.Contains(called, "builtin") {
				t.Errorf("the other webhooks were called: %q", called)
			}
		})
	}
}
