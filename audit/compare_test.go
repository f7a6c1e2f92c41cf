package audit

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/hookback/hookback/internal/report"
)

func TestCompare(t *testing.T) {
	obj := []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns"}}`)
	row := func(webhook string, policy bool, name string, out Outcome, msg string, patch ...PatchOperation) Result {
		return Result{Webhook: webhook, Policy: policy, Resource: "pods", Namespace: "ns", Name: name, Operation: "CREATE", Result: out, Message: msg, Patch: patch, object: obj}
	}
	results := []Result{
		row("hook", false, "same-deny", Denied, "no latest tag"),
		row("ValidatingAdmissionPolicy/p", true, "same-deny", Denied, "no latest tag"),
		row("hook", false, "other-message", Denied, "no latest tag"),
		row("ValidatingAdmissionPolicy/p", true, "other-message", Denied, "image tag latest"),
		row("hook", false, "only-hook-denies", Denied, "no"),
		row("ValidatingAdmissionPolicy/p", true, "only-hook-denies", Allowed, ""),
		// the same label added two ways: a patch of the key, and of the map
		row("hook", false, "same-patch", Patched, "", PatchOperation{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": "a"}}),
		row("ValidatingAdmissionPolicy/p", true, "same-patch", Patched, "", PatchOperation{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": "a"}}),
		row("hook", false, "other-patch", Patched, "", PatchOperation{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": "a"}}),
		row("ValidatingAdmissionPolicy/p", true, "other-patch", Patched, "", PatchOperation{Op: "add", Path: "/metadata/labels", Value: map[string]any{"team": "b"}}),
		row("ValidatingAdmissionPolicy/p", true, "policy-only", Denied, "x"),
	}
	cs := Compare(results)
	if len(cs) != 1 || cs[0].Webhook != "hook" || cs[0].Policy != "ValidatingAdmissionPolicy/p" {
		t.Fatalf("comparisons %+v, want hook vs ValidatingAdmissionPolicy/p", cs)
	}
	c := cs[0]
	if c.Agreements != 2 {
		t.Errorf("agreements %d, want 2 (same-deny, same-patch)", c.Agreements)
	}
	var whats []string
	for _, d := range c.Disagreements {
		whats = append(whats, d.Name+":"+d.What)
	}
	if got, want := strings.Join(whats, " "), "other-message:message only-hook-denies:decision other-patch:patch"; got != want {
		t.Errorf("disagreements %q, want %q", got, want)
	}

	t.Run("table names each disagreement", func(t *testing.T) {
		var b bytes.Buffer
		if err := report.Write(&b, report.FormatTable, Report{Comparisons: cs}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), `hook vs ValidatingAdmissionPolicy/p: pods ns/other-message CREATE: message: webhook denied "no latest tag", policy denied "image tag latest"`) {
			t.Errorf("table:\n%s", b.String())
		}
	})
	t.Run("junit has a failure per disagreement in one document", func(t *testing.T) {
		var b bytes.Buffer
		if err := report.Write(&b, report.FormatJUnit, Report{Results: results[:2], Comparisons: cs}); err != nil {
			t.Fatal(err)
		}
		var doc report.JUnit
		if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		last := doc.Suites[len(doc.Suites)-1]
		if last.Name != "hook vs ValidatingAdmissionPolicy/p" || last.Failures != 3 || last.Tests != 4 {
			t.Errorf("comparison suite %+v", last)
		}
	})
	t.Run("json is one document holding the reviews and the comparisons", func(t *testing.T) {
		var b bytes.Buffer
		if err := report.Write(&b, report.FormatJSON, Report{Results: results[:2], Comparisons: cs}); err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Reviews     []Result     `json:"reviews"`
			Comparisons []Comparison `json:"comparisons"`
		}
		dec := json.NewDecoder(&b)
		if err := dec.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if dec.More() {
			t.Error("a second JSON document follows the first")
		}
		if len(doc.Reviews) != 2 || len(doc.Comparisons) != len(cs) {
			t.Errorf("document: %d reviews, %d comparisons", len(doc.Reviews), len(doc.Comparisons))
		}
	})
}
