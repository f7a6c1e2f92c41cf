package webhooks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/hookback/hookback/admission"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/randfill"
)

// TestCreatedPodKeepsWhatHandlersRead runs pod-lifespan and pod-sidecar on
// random pods decoded whole (encoding/json into a typed pod, as before) and
// as decodeCreatedPod keeps them: the answers, Events and log lines must be
// the same, or a handler reads a field the slim decode drops.
func TestCreatedPodKeepsWhatHandlersRead(t *testing.T) {
	f := randfill.NewWithSeed(12).NilChance(0.2).NumElements(0, 3).MaxDepth(6)
	times := regexp.MustCompile(`"time":"[^"]*"`)
	type judge interface {
		judge(admission.Request, *corev1.Pod) admission.Response
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: admissionv1.Create,
		Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"}, Namespace: "ns"}}
	run := func(name string, pod *corev1.Pod) string {
		var logs bytes.Buffer
		deps, rec, _ := testDeps()
		deps.Log = slog.New(slog.NewJSONHandler(&logs, nil))
		resp := buildOne(t, name, DefaultOptions(), deps).(judge).judge(req, pod)
		return fmt.Sprintf("%v %s %q %v %q %s", resp.Allowed, resp.Patch, resp.Warnings, resp.Result, drain(rec), times.ReplaceAllString(logs.String(), ""))
	}
	judged, patched := 0, 0
	for i := range 300 {
		raw, err := json.Marshal(randomPod(f, i))
		if err != nil {
			continue // randfill makes values some types cannot encode
		}
		whole := &corev1.Pod{}
		if err := json.Unmarshal(raw, whole); err != nil {
			continue
		}
		slim, err := decodeCreatedPod(admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Object: runtime.RawExtension{Raw: raw}}})
		if err != nil {
			t.Fatalf("decode a whole pod: %v", err)
		}
		for _, name := range []string{NamePodLifespan, NamePodSidecar} {
			a, b := run(name, whole), run(name, slim)
			if a != b {
				t.Fatalf("%s reads a field decodeCreatedPod drops:\nwhole: %s\nslim:  %s", name, a, b)
			}
			if strings.Contains(a, `"op"`) {
				patched++
			}
		}
		judged++
	}
	if judged < 100 || patched < 20 {
		t.Fatalf("%d random pods judged, %d patched: the test proves little", judged, patched)
	}
}

// randomPod fills a pod at random, steering some towards the annotations and
// labels the handlers act on so that every branch is taken.
func randomPod(f *randfill.Filler, i int) *corev1.Pod {
	p := &corev1.Pod{}
	f.Fill(p)
	p.Status = corev1.PodStatus{}
	p.Spec.Overhead, p.Spec.Resources = nil, nil
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for j := range list {
			list[j].Resources = corev1.ResourceRequirements{}
		}
	}
	p.Spec.EphemeralContainers = nil
	p.Spec.Volumes = nil
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	switch i % 4 {
	case 0:
		p.Labels[LabelLifespanRequested] = fmt.Sprint(i % 16)
		p.Annotations[AnnotationSidecarEnable] = "true"
		for _, k := range sidecarRequired {
			p.Annotations[k] = "x"
		}
		if len(p.Spec.Containers) > 0 && i%8 == 0 {
			p.Annotations[AnnotationSidecarTargetContainer] = p.Spec.Containers[0].Name
		}
	case 1:
		p.Annotations[AnnotationSidecarEnable] = "maybe"
	}
	return p
}
