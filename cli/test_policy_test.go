package cli

import (
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
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, err := run(t, append([]string{"test"}, c.args...)...)
			if err != nil || !strings.Contains(errOut+out, " 0 failed, 0 errors") {
				t.Errorf("%v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
			}
		})
	}
}
