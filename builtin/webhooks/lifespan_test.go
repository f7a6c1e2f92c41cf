package webhooks

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

func TestLifespan(t *testing.T) {
	tests := []struct {
		fixture string
		// wantValues are the lifespan-remaining toleration values the pod
		// ends up with, in order ("exists" for the operator Exists one
		// unlabelled pods get); nil: the pod must be unchanged.
		wantValues []string
		wantEvents []string
		wantWarn   bool
	}{
		{fixture: "v1-create-3", wantValues: days(3)},
		{fixture: "v1beta1-create-14", wantValues: days(14)},
		{fixture: "v1-create-partial", wantValues: append([]string{"5", "9"}, slices.DeleteFunc(days(6), func(v string) bool { return v == "9" })...)},
		{fixture: "v1beta1-reinvocation"},
		{fixture: "v1-create-0", wantValues: days(0)},
		{fixture: "v1-create-invalid", wantWarn: true, wantEvents: []string{
			`Warning LifespanInvalid label acme.com/lifespan-requested="15" is not a whole number of days in 0..14: no lifespan tolerations added`}},
		{fixture: "v1beta1-create-invalid", wantWarn: true, wantEvents: []string{
			`Warning LifespanInvalid label acme.com/lifespan-requested="two" is not a whole number of days in 0..14: no lifespan tolerations added`}},
		{fixture: "v1-create-invalid-dryrun", wantWarn: true},
		{fixture: "v1beta1-create-invalid-dryrun", wantWarn: true},
		{fixture: "v1-create-nolabel", wantValues: []string{"exists"}},
		{fixture: "v1-create-empty", wantValues: []string{"exists"}},
		{fixture: "v1-create-nolabel-tolerated"},
		{fixture: "v1-create-undecodable"},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			deps, rec, _ := testDeps()
			h := buildOne(t, NamePodLifespan, DefaultOptions(), deps)
			req := loadRequest(t, NamePodLifespan, tt.fixture)
			resp := h.Handle(context.Background(), req)
			checkDecision(t, resp, true, http.StatusOK, "")
			if got := drain(rec); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %q, want %q", got, tt.wantEvents)
			}
			if (len(resp.Warnings) > 0) != tt.wantWarn {
				t.Errorf("warnings = %q, want some: %v", resp.Warnings, tt.wantWarn)
			}
			if tt.wantValues == nil {
				if len(resp.Patch) != 0 {
					t.Fatalf("pod changed: %s", resp.Patch)
				}
				return
			}
			checkLifespanPatch(t, h, req, resp, tt.wantValues)
		})
	}
}

// checkLifespanPatch asserts resp adds only tolerations, leaving the pod's
// own in place, that the pod ends with wantValues, and that a reinvocation
// with the result changes nothing.
func checkLifespanPatch(t *testing.T, h admission.Handler, req admission.Request, resp admission.Response, wantValues []string) {
	t.Helper()
	for _, p := range patchPaths(t, resp.Patch) {
		if p != "add /spec/tolerations" && !strings.HasPrefix(p, "add /spec/tolerations/") {
			t.Errorf("patch touches more than tolerations: %s", p)
		}
	}
	before, after := podFrom(t, req), patchedPod(t, req, resp)
	if got := lifespanValues(t, after.Spec.Tolerations); !slices.Equal(got, wantValues) {
		t.Errorf("lifespan toleration values = %q, want %q", got, wantValues)
	}
	// Other tolerations stay, in place, before the added ones.
	if n := len(before.Spec.Tolerations); !apiequality.Semantic.DeepEqual(after.Spec.Tolerations[:n], before.Spec.Tolerations) {
		t.Errorf("existing tolerations changed: %+v", after.Spec.Tolerations[:n])
	}
	// Reinvocation: feeding the result back changes nothing.
	again := req
	again.Object.Raw = applyPatch(t, req.Object.Raw, resp.Patch)
	if resp2 := h.Handle(context.Background(), again); len(resp2.Patch) != 0 {
		t.Errorf("second invocation patched again: %s", resp2.Patch)
	}
}

// days returns "from".."14".
func days(from int) []string {
	var out []string
	for d := from; d <= 14; d++ {
		out = append(out, strconv.Itoa(d))
	}
	return out
}

// lifespanValues checks the shape of every lifespan toleration and returns
// their values.
func lifespanValues(t *testing.T, tols []corev1.Toleration) []string {
	t.Helper()
	var values []string
	for _, tol := range tols {
		if tol.Key != TaintLifespanRemaining {
			continue
		}
		if tol.Effect != corev1.TaintEffectNoSchedule || tol.TolerationSeconds != nil {
			t.Errorf("bad lifespan toleration %+v", tol)
		}
		switch tol.Operator {
		case corev1.TolerationOpExists:
			if tol.Value != "" {
				t.Errorf("Exists toleration with a value: %+v", tol)
			}
			values = append(values, "exists")
		case corev1.TolerationOpEqual, "":
			values = append(values, tol.Value)
		default:
			t.Errorf("bad lifespan toleration operator %+v", tol)
		}
	}
	return values
}

func podFrom(t *testing.T, req admission.Request) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	decodeInto(t, req.Object.Raw, pod)
	return pod
}
