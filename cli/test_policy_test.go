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
