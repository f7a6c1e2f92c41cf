package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestPolicy: hookback test --policy runs a suite's cases against the
// Kubernetes documentation's policy, evaluated with the apiserver's code.
func TestTestPolicy(t *testing.T) {
	out, errOut, err := run(t, "test", "--policy", "../policy/testdata/basic/policy.yaml", "--webhooks", "none", "../testdata/suite-policy")
	if err != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	for _, want := range []string{"seven-replicas-denied", "three-replicas-allowed"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %s:\n%s", want, out)
		}
	}
}

// TestShippedSuitesPass: the suites in testdata pass when run as their
// files say.
func TestShippedSuitesPass(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"built-ins", []string{"--webhooks", "pod-name,pod-lifespan", "../testdata/suite"}},
		{"a CRD's rules", []string{"--crd", "../testdata/crdvalidate/widgets-crd.yaml", "--webhooks", "none", "../testdata/crdvalidate/suite"}},
		{"a policy before a CRD's rules", []string{"--crd", "../testdata/crdvalidate/widgets-crd.yaml", "--policy", "../testdata/crdvalidate/suite-policy/policy.yaml",
			"--webhooks", "none", "../testdata/crdvalidate/suite-policy/cases.yaml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := run(t, append([]string{"test"}, c.args...)...)
			if err != nil || !strings.Contains(errOut+out, " 0 failed, 0 errors") {
				t.Errorf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			}
		})
	}
}

// TestTestPolicyOnACustomResourceWithoutItsCRD: a MutatingAdmissionPolicy
// on a kind whose CRD the suite was not given says to pass it, where the
// apiserver's own message speaks of a CRD still loading.
func TestTestPolicyOnACustomResourceWithoutItsCRD(t *testing.T) {
	cases := filepath.Join(t.TempDir(), "cases.yaml")
	if err := os.WriteFile(cases, []byte(`apiVersion: hookback.dev/v1alpha1
kind: Suite
cases:
- name: floor
  operation: CREATE
  namespace: default
  object: {apiVersion: crdvalidate.hookback.dev/v1, kind: Widget, metadata: {name: floor}, spec: {class: gold}}
  expect: {result: allowed}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "test", "--policy", "../testdata/crdvalidate/suite-policy/policy.yaml", "--webhooks", "none", cases)
	if err == nil || !strings.Contains(out+errOut, "no CRD of Widget was given; pass it with --crd") {
		t.Errorf("want a failure naming --crd; %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
}
