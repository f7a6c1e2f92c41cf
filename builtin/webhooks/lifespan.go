package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
)

const (
	// LabelLifespanRequested asks for a pod lifespan in days, "0".."14".
	LabelLifespanRequested = "acme.com/lifespan-requested"
	// TaintLifespanRemaining is the key of the taint nodes carry with the
	// days they have left; a pod tolerates every value from its requested
	// lifespan up to the maximum, so it only lands on nodes that live long
	// enough.
	TaintLifespanRemaining = "acme.com/lifespan-remaining"

	minLifespanDays = 0
	maxLifespanDays = 14
)

// lifespanHandler adds lifespan tolerations (/mutate-pod-lifespan, pods
// CREATE). A pod labelled with N days tolerates every remaining-days value
// from N to the maximum, so it only lands on nodes that live long enough. A
// pod without the label (or with an empty value) asked for nothing, so it
// tolerates the taint whatever its value: it may land anywhere, as it could
// before nodes were tainted.
type lifespanHandler struct {
	log    *slog.Logger
	events eventer
}

// Handle implements admission.Handler. The tolerations are appended to the raw
// object's list; nothing else in the pod is touched.
func (h *lifespanHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	pod, ok := createdPod(req, h.log)
	if !ok {
		return admission.Allowed("")
	}
	return h.judge(req, pod)
}

// judge decides a created pod, decoded by decodeCreatedPod.
func (h *lifespanHandler) judge(req admission.Request, pod *corev1.Pod) admission.Response {
	want, note := lifespanTolerations(pod.Labels[LabelLifespanRequested])
	if note != "" {
		h.events.warn(req, pod, ReasonLifespanInvalid, actionAddTolerations, note)
		return admission.Allowed("").WithWarnings(note)
	}
	var missing []corev1.Toleration
	for _, t := range want {
		if !hasToleration(pod.Spec.Tolerations, t) {
			missing = append(missing, t)
		}
	}
	// None missing, e.g. on reinvocation: no patch.
	return admission.Patched("", admission.AppendOps("/spec/tolerations", len(pod.Spec.Tolerations) > 0, missing...)...)
}

// lifespanTolerations returns the tolerations a label value asks for, or a
// note saying why the value is unusable.
func lifespanTolerations(value string) ([]corev1.Toleration, string) {
	if value == "" {
		return []corev1.Toleration{{Key: TaintLifespanRemaining, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}, ""
	}
	days, err := strconv.Atoi(value)
	if err != nil || days < minLifespanDays || days > maxLifespanDays {
		return nil, fmt.Sprintf("label %s=%s is not a whole number of days in %d..%d: no lifespan tolerations added",
			LabelLifespanRequested, short(value), minLifespanDays, maxLifespanDays)
	}
	out := make([]corev1.Toleration, 0, maxLifespanDays-days+1)
	for d := days; d <= maxLifespanDays; d++ {
		out = append(out, corev1.Toleration{
			Key:      TaintLifespanRemaining,
			Operator: corev1.TolerationOpEqual,
			Value:    strconv.Itoa(d),
			Effect:   corev1.TaintEffectNoSchedule,
		})
	}
	return out, ""
}

// hasToleration reports whether list holds t. An empty operator means Equal
// (the API's default), so a user-written toleration without one counts.
func hasToleration(list []corev1.Toleration, t corev1.Toleration) bool {
	for _, have := range list {
		op := have.Operator
		if op == "" {
			op = corev1.TolerationOpEqual
		}
		if have.Key == t.Key && op == t.Operator && have.Value == t.Value &&
			have.Effect == t.Effect && have.TolerationSeconds == nil {
			return true
		}
	}
	return false
}
