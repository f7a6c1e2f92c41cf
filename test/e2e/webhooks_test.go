package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The webhook tests run in parallel with each other (after the package's
// sequential tests): each has its own namespace and hookback session, and
// the node test, which waits for kwok heartbeats, dominates the run.

func TestWebhookPodNameDeniesBannedWords(t *testing.T) {
	t.Parallel()
	type pod struct {
		name, generateName string
		denied             string // the banned word named in the denial; "" admits
	}
	for _, tc := range []struct {
		name  string
		flags []string
		pods  []pod
	}{{
		name: "default words",
		pods: []pod{
			{name: "offensive-pod", denied: "offensive"},
			{name: "an-offensive-name", denied: "offensive"},
			{generateName: "offensive-", denied: "offensive"},
			{name: "friendly-pod"},
		},
	}, {
		name:  "custom words",
		flags: []string{"--banned-words", "forbidden,verboten"},
		pods: []pod{
			{name: "forbidden-pod", denied: "forbidden"},
			{generateName: "pod-verboten-", denied: "verboten"},
			{name: "offensive-pod"}, // the default is replaced, not extended
			{name: "friendly-pod"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ns := namespace(t)
			p := start(t, whArgs("pod-name", tc.flags...)...)
			p.ready(t)
			for _, pc := range tc.pods {
				label := pc.name + pc.generateName
				created, err := whCreatePod(context.Background(), ns, metav1.ObjectMeta{Name: pc.name, GenerateName: pc.generateName})
				if pc.denied == "" {
					if err != nil {
						t.Errorf("pod %s: denied: %v", label, err)
						continue
					}
					// Admitted by the webhook, not by a dead one under
					// failurePolicy Ignore.
					p.whWaitLogLine(t, "msg=admission", "webhook=pod-name", "namespace="+ns, "name="+pc.name+" ", "decision=allowed")
					continue
				}
				if err == nil {
					t.Errorf("pod %s: admitted as %s, want denied", label, created.Name)
					continue
				}
				msg := fmt.Sprintf("pod name contains %q", pc.denied)
				if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), "pod-name.hookback.dev") {
					t.Errorf("pod %s: error %q, want a 403 from pod-name.hookback.dev with %q", label, err, msg)
				}
				if pc.name != "" {
					p.whWaitLogLine(t, "msg=admission", "webhook=pod-name", "namespace="+ns, "name="+pc.name+" ", "decision=denied", "reason=")
				}
			}
		})
	}
}

func TestWebhookPodLifespanTolerations(t *testing.T) {
	t.Parallel()
	ns := namespace(t)
	p := start(t, whArgs("pod-lifespan")...)
	p.ready(t)

	t.Run("deployment", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			label   *string // nil: no label
			want    []string
			invalid bool // a LifespanInvalid Warning Event is expected, and no toleration
		}{
			{name: "three", label: ptr.To("3"), want: lifespanDays(3)},
			{name: "fourteen", label: ptr.To("14"), want: lifespanDays(14)},
			{name: "one", label: ptr.To("1"), want: lifespanDays(1)},
			{name: "zero", label: ptr.To("0"), want: lifespanDays(0)},
			{name: "twenty", label: ptr.To("20"), invalid: true},
			{name: "word", label: ptr.To("soon"), invalid: true},
			// Unlabelled pods may land on any lifespan-tainted node.
			{name: "unlabelled", want: []string{"exists"}},
			{name: "empty", label: ptr.To(""), want: []string{"exists"}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				labels := map[string]string{}
				if tc.label != nil {
					labels["acme.com/lifespan-requested"] = *tc.label
				}
				pods := whDeployment(t, ns, "lifespan-"+tc.name, 2, labels, nil)
				want := tc.want
				for i := range pods {
					if got := lifespanTolerations(t, &pods[i]); !slices.Equal(got, want) {
						t.Errorf("pod %s tolerates acme.com/lifespan-remaining %v, want %v", pods[i].Name, got, want)
					}
				}
				if !tc.invalid {
					return
				}
				rs := whControllerOf(t, &pods[0])
				ev := whWaitEvent(t, ns, whEventQuery{reason: "LifespanInvalid", typ: corev1.EventTypeWarning,
					reportingController: "pod-lifespan", regardingKind: "ReplicaSet", regardingName: rs})
				if !strings.Contains(ev.Note, strconv.Quote(*tc.label)) {
					t.Errorf("Event note %q does not name the value %q", ev.Note, *tc.label)
				}
			})
		}
	})

	// A pod without a controlling owner: the Event goes to the pod when it
	// is named, else (generateName: no name at admission) to its namespace.
	//
	// Two different problems about the same target are two Events, each
	// with its own message: two generateName pods (both reported against
	// the namespace) and a named pod deleted and created again.
	t.Run("bare pod", func(t *testing.T) {
		ctx := context.Background()
		bad := func(v string) map[string]string { return map[string]string{"acme.com/lifespan-requested": v} }
		var pods []*corev1.Pod
		for _, meta := range []metav1.ObjectMeta{
			{Name: "lifespan-bare", Labels: bad("15")},
			{GenerateName: "lifespan-bare-", Labels: bad("16")},
			{GenerateName: "lifespan-bare-", Labels: bad("never")},
		} {
			pod, err := whCreatePod(ctx, ns, meta)
			if err != nil {
				t.Fatal(err)
			}
			pods = append(pods, pod)
		}
		if err := env.client.CoreV1().Pods(ns).Delete(ctx, "lifespan-bare", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
			t.Fatal(err)
		}
		whPodGone(t, ns, "lifespan-bare")
		again, err := whCreatePod(ctx, ns, metav1.ObjectMeta{Name: "lifespan-bare", Labels: bad("99")})
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range append(pods, again) {
			if got := lifespanTolerations(t, pod); len(got) != 0 {
				t.Errorf("pod %s with an invalid lifespan tolerates %v", pod.Name, got)
			}
		}
		q := whEventQuery{reason: "LifespanInvalid", typ: corev1.EventTypeWarning, reportingController: "pod-lifespan"}
		q.regardingKind, q.regardingName = "Pod", "lifespan-bare"
		whWaitEventNotes(t, ns, q, `"15"`, `"99"`)
		q.regardingKind, q.regardingName = "Namespace", ns
		whWaitEventNotes(t, ns, q, `"16"`, `"never"`)
	})
}

// lifespanTolerations returns the values of the pod's lifespan tolerations
// ("exists" for the operator Exists one), failing on one that is not
// NoSchedule, Equal with a value or Exists without.
func lifespanTolerations(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	var values []string
	for _, tol := range pod.Spec.Tolerations {
		if tol.Key != "acme.com/lifespan-remaining" {
			continue
		}
		if tol.Effect != corev1.TaintEffectNoSchedule || tol.TolerationSeconds != nil {
			t.Errorf("pod %s: toleration %+v, want effect NoSchedule", pod.Name, tol)
		}
		switch {
		case tol.Operator == corev1.TolerationOpExists && tol.Value == "":
			values = append(values, "exists")
		case tol.Operator == corev1.TolerationOpEqual:
			values = append(values, tol.Value)
		default:
			t.Errorf("pod %s: toleration %+v, want operator Equal with a value, or Exists", pod.Name, tol)
		}
	}
	return values
}

// lifespanDays is the toleration values a lifespan of from days gets.
func lifespanDays(from int) []string {
	var out []string
	for d := from; d <= 14; d++ {
		out = append(out, strconv.Itoa(d))
	}
	return out
}

func TestWebhookPodSidecarInjection(t *testing.T) {
	t.Parallel()
	const image = "registry.example/xxl-agent:e2e"
	ns := namespace(t)
	p := start(t, whArgs("pod-sidecar", "--sidecar-image", image)...)
	p.ready(t)

	full := map[string]string{
		"xxl-agent/enable":           "true",
		"xxl-agent/admin-address":    "http://xxl-job-admin:8080/xxl-job-admin",
		"xxl-agent/target-container": "app",
		"xxl-agent/job-name":         "e2e-job",
	}
	without := func(keys ...string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			if !slices.Contains(keys, k) {
				m[k] = v
			}
		}
		return m
	}
	with := func(k, v string) map[string]string {
		m := without()
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		skipped     string // part of the SidecarSkipped note; "" injects or ignores
		inject      bool
	}{
		{name: "injected", annotations: full, inject: true},
		{name: "enable-1", annotations: with("xxl-agent/enable", "1"), inject: true},
		{name: "missing-job-name", annotations: without("xxl-agent/job-name"), skipped: `missing annotation "xxl-agent/job-name"`},
		{name: "missing-two", annotations: without("xxl-agent/admin-address", "xxl-agent/target-container"),
			skipped: `missing annotation "xxl-agent/admin-address", "xxl-agent/target-container"`},
		{name: "no-such-target", annotations: with("xxl-agent/target-container", "web"), skipped: `target container "web"`},
		{name: "not-boolean", annotations: with("xxl-agent/enable", "sure"), skipped: `xxl-agent/enable="sure" is not a boolean`},
		{name: "disabled", annotations: with("xxl-agent/enable", "false")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each row in its own namespace: "unchanged" rows count the
			// webhook's admission lines there, to prove it was called.
			ns := namespace(t)
			pods := whDeployment(t, ns, "sidecar-"+tc.name, 2, nil, tc.annotations)
			for i := range pods {
				pod := &pods[i]
				if !tc.inject {
					if names := containerNames(pod); !slices.Equal(names, []string{"app"}) {
						t.Errorf("pod %s has containers %v, want it unchanged: [app]", pod.Name, names)
					}
					continue
				}
				checkSidecar(t, pod, image, tc.annotations)
			}
			if !tc.inject {
				p.whWaitLogCount(t, len(pods), "msg=admission", "webhook=pod-sidecar", "namespace="+ns+" ", "decision=allowed", "patch_ops=0 ")
			}
			if tc.skipped == "" {
				return
			}
			ev := whWaitEvent(t, ns, whEventQuery{reason: "SidecarSkipped", typ: corev1.EventTypeWarning,
				reportingController: "pod-sidecar", regardingKind: "ReplicaSet", regardingName: whControllerOf(t, &pods[0])})
			if !strings.Contains(ev.Note, tc.skipped) {
				t.Errorf("Event note %q does not say %q", ev.Note, tc.skipped)
			}
		})
	}

	// A pod deleted and created again with another problem: a second Event
	// with its own message, not a repeat of the first.
	t.Run("recreated pod", func(t *testing.T) {
		ctx := context.Background()
		for i, ann := range []map[string]string{without("xxl-agent/job-name"), without("xxl-agent/admin-address")} {
			if i > 0 {
				if err := env.client.CoreV1().Pods(ns).Delete(ctx, "sidecar-bare", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
					t.Fatal(err)
				}
				whPodGone(t, ns, "sidecar-bare")
			}
			if _, err := whCreatePod(ctx, ns, metav1.ObjectMeta{Name: "sidecar-bare", Annotations: ann}); err != nil {
				t.Fatal(err)
			}
		}
		whWaitEventNotes(t, ns, whEventQuery{reason: "SidecarSkipped", typ: corev1.EventTypeWarning,
			reportingController: "pod-sidecar", regardingKind: "Pod", regardingName: "sidecar-bare"},
			`missing annotation "xxl-agent/job-name"`, `missing annotation "xxl-agent/admin-address"`)
	})
}

func containerNames(pod *corev1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// checkSidecar checks that pod got exactly one xxl-agent container, built
// from the annotations.
func checkSidecar(t *testing.T, pod *corev1.Pod, image string, ann map[string]string) {
	t.Helper()
	if names := containerNames(pod); !slices.Equal(names, []string{"app", "xxl-agent"}) {
		t.Fatalf("pod %s has containers %v, want [app xxl-agent]", pod.Name, names)
	}
	c := pod.Spec.Containers[1]
	if c.Image != image {
		t.Errorf("pod %s: sidecar image %q, want %q", pod.Name, c.Image, image)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "http-xxl-agent" || c.Ports[0].ContainerPort != 9999 || c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("pod %s: sidecar ports %+v, want [http-xxl-agent 9999/TCP]", pod.Name, c.Ports)
	}
	got := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			got[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			got[e.Name] = "fieldRef:" + e.ValueFrom.FieldRef.FieldPath
		default:
			got[e.Name] = "unexpected source"
		}
	}
	want := map[string]string{
		"CONTAINER_NAME": ann["xxl-agent/target-container"],
		"XXL_JOB_NAME":   ann["xxl-agent/job-name"],
		"XXL_JOB_ADDR":   ann["xxl-agent/admin-address"],
		"NAMESPACE":      "fieldRef:metadata.namespace",
		"POD_NAME":       "fieldRef:metadata.name",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pod %s: sidecar env %v, want %v", pod.Name, got, want)
	}
}
