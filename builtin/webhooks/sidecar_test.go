package webhooks

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/events"
)

// testSidecarImage differs from the default, to prove the option is used.
const testSidecarImage = "example.com/xxl/agent:1.0"

func TestSidecar(t *testing.T) {
	const skipped = "Warning SidecarSkipped xxl-agent sidecar not injected: "
	tests := []struct {
		fixture    string
		wantInject bool
		wantEvents []string
		wantWarn   bool
	}{
		{fixture: "v1-create-inject", wantInject: true},
		{fixture: "v1beta1-create-inject", wantInject: true},
		// Mutation happens on dry-run too, so a server-side dry run shows
		// the sidecar; only the Events are skipped.
		{fixture: "v1-dryrun-inject", wantInject: true},
		{fixture: "v1-reinvocation"},
		{fixture: "v1-enable-false"},
		{fixture: "v1-no-annotation"},
		{fixture: "v1-create-undecodable"},
		{fixture: "v1beta1-missing-annotations", wantWarn: true, wantEvents: []string{
			skipped + `missing annotation "xxl-agent/admin-address", "xxl-agent/job-name"`}},
		{fixture: "v1-target-missing", wantWarn: true, wantEvents: []string{
			skipped + `target container "worker" (annotation xxl-agent/target-container) is not in the pod`}},
		{fixture: "v1-name-clash", wantWarn: true, wantEvents: []string{
			skipped + `the pod already has a container named "xxl-agent" that is not the agent`}},
		{fixture: "v1beta1-port-clash", wantWarn: true, wantEvents: []string{
			skipped + `container "app" already uses port 9999`}},
		{fixture: "v1-portname-clash", wantWarn: true, wantEvents: []string{
			skipped + `container "proxy" already uses port name "http-xxl-agent"`}},
		{fixture: "v1beta1-enable-invalid", wantWarn: true, wantEvents: []string{
			skipped + `annotation xxl-agent/enable="yes please" is not a boolean`}},
		{fixture: "v1beta1-dryrun-missing", wantWarn: true},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			deps, rec, _ := testDeps()
			opts := DefaultOptions()
			opts.SidecarImage = testSidecarImage
			h := buildOne(t, NamePodSidecar, opts, deps)
			req := loadRequest(t, NamePodSidecar, tt.fixture)
			resp := h.Handle(context.Background(), req)
			checkDecision(t, resp, true, http.StatusOK, "")
			if got := drain(rec); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events = %q, want %q", got, tt.wantEvents)
			}
			if (len(resp.Warnings) > 0) != tt.wantWarn {
				t.Errorf("warnings = %q, want some: %v", resp.Warnings, tt.wantWarn)
			}
			if !tt.wantInject {
				if len(resp.Patch) != 0 {
					t.Fatalf("pod changed: %s", resp.Patch)
				}
				return
			}
			checkInjected(t, h, rec, req, resp)
		})
	}
}

// checkInjected asserts resp appends exactly the agent to the request's pod,
// and that a reinvocation with the result changes nothing.
func checkInjected(t *testing.T, h admission.Handler, rec *events.FakeRecorder, req admission.Request, resp admission.Response) {
	t.Helper()
	before := podFrom(t, req)
	if got, want := patchPaths(t, resp.Patch), []string{"add /spec/containers/-"}; !slices.Equal(got, want) {
		t.Errorf("patch ops = %q, want %q", got, want)
	}
	after := patchedPod(t, req, resp)
	if n := len(before.Spec.Containers); len(after.Spec.Containers) != n+1 ||
		!apiequality.Semantic.DeepEqual(after.Spec.Containers[:n], before.Spec.Containers) {
		t.Fatalf("containers = %+v, want the original ones plus the agent", after.Spec.Containers)
	}
	checkAgent(t, &after.Spec.Containers[len(after.Spec.Containers)-1], testSidecarImage, before.Annotations)
	// Reinvocation: the apiserver calls again with the result.
	again := req
	again.Object.Raw = applyPatch(t, req.Object.Raw, resp.Patch)
	if resp2 := h.Handle(context.Background(), again); len(resp2.Patch) != 0 || len(drain(rec)) != 0 {
		t.Errorf("second invocation: patch %s, events recorded", resp2.Patch)
	}
}

func checkAgent(t *testing.T, c *corev1.Container, image string, ann map[string]string) {
	t.Helper()
	want := corev1.Container{
		Name:  "xxl-agent",
		Image: image,
		Ports: []corev1.ContainerPort{{Name: "http-xxl-agent", ContainerPort: 9999, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "CONTAINER_NAME", Value: ann["xxl-agent/target-container"]},
			{Name: "XXL_JOB_NAME", Value: ann["xxl-agent/job-name"]},
			{Name: "XXL_JOB_ADDR", Value: ann["xxl-agent/admin-address"]},
			{Name: "NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		},
	}
	if !apiequality.Semantic.DeepEqual(*c, want) {
		t.Errorf("agent container =\n%+v\nwant\n%+v", *c, want)
	}
	if want.Env[0].Value == "" || want.Env[1].Value == "" || want.Env[2].Value == "" {
		t.Errorf("fixture lacks sidecar annotations: %v", ann)
	}
}
