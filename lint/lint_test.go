package lint

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/hookback/hookback/manifests"
)

func load(t *testing.T, file string) []manifests.Document {
	t.Helper()
	docs, err := manifests.Load([]string{filepath.Join("testdata", file)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func lint(t *testing.T, docs []manifests.Document) *Report {
	t.Helper()
	in, err := Read(docs)
	if err != nil {
		t.Fatal(err)
	}
	return Run(in, Options{FailOn: string(Error)})
}

// TestRules: each configuration yields exactly the rules it was written
// for, at their severity, and every fix, applied as the JSON patch it is,
// removes its finding.
func TestRules(t *testing.T) {
	cases := []struct {
		name, file string
		want       map[string]Severity
	}{
		{"self-deadlock", "self-deadlock.yaml", map[string]Severity{"self-deadlock": Error}},
		{"control-plane namespaces", "control-plane.yaml", map[string]Severity{"control-plane-namespaces": Error}},
		{"control-plane namespaces left out by matchConditions", "control-plane-conditions.yaml", map[string]Severity{}},
		{"critical resources", "critical-resources.yaml", map[string]Severity{"critical-resources": Error}},
		{"chain budget", "chain-budget.yaml", map[string]Severity{"chain-budget": Error}},
		{"chain budget with reinvocation", "chain-budget-reinvoked.yaml", map[string]Severity{"chain-budget": Error}},
		{"chain budget of webhooks scoped to different namespaces", "chain-budget-scoped.yaml", map[string]Severity{}},
		{"side effects", "side-effects.yaml", map[string]Severity{"dry-run-side-effects": Error}},
		{"review versions", "review-versions.yaml", map[string]Severity{"review-versions": Warning}},
		{"wildcard subresources", "wildcard-subresources.yaml", map[string]Severity{"wildcard-subresources": Warning}},
		{"match policy exact", "match-policy-exact.yaml", map[string]Severity{"match-policy-exact": Warning}},
		{"opt-out label", "opt-out-label.yaml", map[string]Severity{"opt-out-label": Warning}},
		{"policy in control-plane namespaces", "policy-control-plane.yaml", map[string]Severity{"control-plane-namespaces": Warning}},
		{"mutating policy in control-plane namespaces", "policy-control-plane-mutating.yaml", map[string]Severity{"control-plane-namespaces": Warning}},
		{"policy on critical resources", "policy-critical.yaml", map[string]Severity{"critical-resources": Warning}},
		{"unbound policy and binding", "policy-unbound.yaml", map[string]Severity{"unbound-policy": Warning}},
		{"policy params without paramRef", "policy-params.yaml", map[string]Severity{"policy-params": Error}},
		{"validation actions without Deny", "policy-validation-actions.yaml", map[string]Severity{"validation-actions": Warning}},
		{"policy scoped out of the control plane", "policy-clean.yaml", map[string]Severity{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			docs := load(t, c.file)
			rep := lint(t, docs)
			got := map[string]Severity{}
			for _, f := range rep.Findings {
				if s, ok := got[f.Rule]; !ok || f.Severity.AtLeast(s) {
					got[f.Rule] = f.Severity
				}
				if f.Link == "" || f.Path == "" || f.Message == "" || f.Object == "" {
					t.Errorf("finding without link, path, message or object: %+v", f)
				}
			}
			if !equalMaps(got, c.want) {
				t.Fatalf("rules %v, want %v\n%s", got, c.want, table(t, rep))
			}
			for _, f := range rep.Findings {
				if len(f.Fix) > 0 {
					checkFixRemoves(t, docs, f)
				}
			}
		})
	}
}

func equalMaps(a, b map[string]Severity) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func table(t *testing.T, r *Report) string {
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkFixRemoves applies f's patch to its object and lints again: the
// finding's rule must no longer fire for that webhook.
func checkFixRemoves(t *testing.T, docs []manifests.Document, f Finding) {
	t.Helper()
	patched := slices.Clone(docs)
	for i, d := range patched {
		o := &Object{Kind: d.Object.GetKind(), Name: d.Object.GetName(), Namespace: d.Object.GetNamespace()}
		if o.Ref() != f.Object {
			continue
		}
		raw, err := json.Marshal(d.Object.Object)
		if err != nil {
			t.Fatal(err)
		}
		ops, err := json.Marshal(f.Fix)
		if err != nil {
			t.Fatal(err)
		}
		p, err := jsonpatch.DecodePatch(ops)
		if err != nil {
			t.Fatalf("%s: fix %s: %v", f.Rule, ops, err)
		}
		out, err := p.Apply(raw)
		if err != nil {
			t.Fatalf("%s: fix %s does not apply to %s: %v", f.Rule, ops, f.Object, err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(out); err != nil {
			t.Fatal(err)
		}
		patched[i].Object = u
	}
	for _, g := range lint(t, patched).Findings {
		if g.Rule == f.Rule && g.Object == f.Object && g.Webhook == f.Webhook && g.Path == f.Path {
			t.Errorf("%s: after its fix %v, still: %s", f.Rule, f.Fix, g.Message)
		}
	}
}

// TestDeadline: the chain budget against a shorter request deadline (a
// client's timeout parameter): 5 s fits a 3 s chain, not a 6 s one.
func TestDeadline(t *testing.T) {
	cases := []struct {
		name     string
		timeout  int32
		findings int
	}{{"2 s each: 6 s", 2, 1}, {"1 s each: 3 s", 1, 0}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Read(load(t, "chain-budget.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			in.Hooks = in.Hooks[:3] // the mutating ones
			for _, h := range in.Hooks {
				h.TimeoutSeconds = &c.timeout
			}
			rep := Run(in, Options{FailOn: "error", Deadline: 5 * time.Second})
			if len(rep.Findings) != c.findings {
				t.Fatalf("%d findings, want %d\n%s", len(rep.Findings), c.findings, table(t, rep))
			}
			if c.findings > 0 && !strings.Contains(rep.Findings[0].Message, "up to 6s against the request's deadline, 5s") {
				t.Errorf("message %q", rep.Findings[0].Message)
			}
		})
	}
}

// TestWellKnownProjectsHaveNoErrors: the webhook configurations of
// cert-manager and Gatekeeper as they ship, which run in many clusters
// without taking them down, yield no finding at error severity.
func TestWellKnownProjectsHaveNoErrors(t *testing.T) {
	for _, file := range []string{"cert-manager.yaml", "gatekeeper.yaml"} {
		t.Run(file, func(t *testing.T) {
			rep := lint(t, load(t, filepath.Join("clean", file)))
			if len(rep.Failing()) > 0 {
				t.Errorf("errors in a configuration that ships:\n%s", table(t, rep))
			}
			t.Logf("%s\n%s", rep.Summary(), table(t, rep))
		})
	}
}
