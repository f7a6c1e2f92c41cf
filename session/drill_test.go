package session

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/lint"
)

func TestDrillOutcome(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{name: "admitted", want: DrillAdmitted},
		{name: "denied", err: apierrors.NewForbidden(pods, "p", errors.New(`admission webhook "v.example.com" denied the request: no`)), want: DrillDenied},
		{name: "timed out", err: apierrors.NewInternalError(errors.New(`failed calling webhook "v.example.com": context deadline exceeded`)), want: DrillTimedOut},
		{name: "failed", err: apierrors.NewInternalError(errors.New(`failed calling webhook "v.example.com": the server responded with 500`)), want: DrillFailed},
		{name: "nothing to send", err: errNotSent, want: DrillSkipped},
		{name: "client gave up", err: context.DeadlineExceeded, want: DrillTimedOut},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := outcome(tc.err); got != tc.want {
				t.Fatalf("outcome(%v) = %q, want %q", tc.err, got, tc.want)
			}
		})
	}
}

func TestDrillReport(t *testing.T) {
	rep := &DrillReport{Results: []DrillResult{
		{Fault: "timeout", Request: "pod create", Namespace: "team-a", Outcome: DrillTimedOut, Latency: "1s", Message: "deadline exceeded"},
		{Fault: "timeout", Request: "node status update", Outcome: DrillAdmitted, Latency: "3ms"},
		{Fault: "timeout", Request: "lease renewal", Namespace: "kube-node-lease", Outcome: DrillSkipped, Latency: "1ms"},
	}}
	if n := len(rep.Failing()); n != 1 {
		t.Errorf("Failing() has %d, want the timed-out pod only", n)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "timed out") || !strings.Contains(b.String(), "team-a") {
		t.Errorf("table:\n%s", b.String())
	}
	j := rep.JUnit()
	if j.Tests != 3 || j.Failures != 1 {
		t.Errorf("junit: %d tests, %d failures; want 3, 1", j.Tests, j.Failures)
	}
}

func TestDrillPredict(t *testing.T) {
	rep := &DrillReport{Results: []DrillResult{
		{Request: "pod create", Namespace: "kube-system"},
		{Request: "pod create", Namespace: "team-a"},
		{Request: drillLease, Namespace: "kube-node-lease"},
	}}
	rep.Predict([]lint.Finding{
		{Rule: "control-plane-namespaces", Severity: lint.Error},
		{Rule: "critical-resources", Severity: lint.Error},
		{Rule: "review-versions", Severity: lint.Warning},
	})
	for i, want := range []string{"control-plane-namespaces (error)", "", "critical-resources (error)"} {
		if got := rep.Results[i].Predicted; got != want {
			t.Errorf("%s %s: predicted %q, want %q", rep.Results[i].Request, rep.Results[i].Namespace, got, want)
		}
	}
}
