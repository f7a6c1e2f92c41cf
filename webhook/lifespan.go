package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/hookback/hookback/server"
)

const (
	// LabelLifespanRequested asks for a pod lifespan in days, "1".."14".
	LabelLifespanRequested = "acme.com/lifespan-requested"
	// TaintLifespanRemaining is the key of the taint nodes carry with the
	// days they have left; a pod tolerates every value from its requested
	// lifespan up to the maximum, so it only lands on nodes that live long
	// enough.
	TaintLifespanRemaining = "acme.com/lifespan-remaining"

	minLifespanDays = 1
	maxLifespanDays = 14
)

// lifespanHandler adds lifespan tolerations (/mutate-pod-lifespan, pods
// CREATE).
type lifespanHandler struct {
	log    *slog.Logger
	events eventer
}

// Handle implements server.Handler.
func (h *lifespanHandler) Handle(_ context.Context, req server.Request) server.Response {
	pod, ok := createdPod(req, h.log)
	if !ok {
		return server.Allowed("")
	}
	value, ok := pod.Labels[LabelLifespanRequested]
	if !ok {
		return server.Allowed("")
	}
	days, err := strconv.Atoi(value)
	if err != nil || days < minLifespanDays || days > maxLifespanDays {
		note := fmt.Sprintf("label %s=%s is not a whole number of days in %d..%d: no lifespan tolerations added",
			LabelLifespanRequested, short(value), minLifespanDays, maxLifespanDays)
		h.events.warn(req, pod, ReasonLifespanInvalid, actionAddTolerations, note)
		return server.Allowed("").WithWarnings(note)
	}
	mutated := pod.DeepCopy()
	if added := addLifespanTolerations(&mutated.Spec, days); added == 0 {
		// Already tolerated, e.g. on reinvocation: nothing to patch.
		return server.Allowed("")
	}
	return server.Patched("", req.Object.Raw, mutated)
}

// addLifespanTolerations appends a toleration for each remaining-days value
// from days to the maximum that spec does not already tolerate, and returns
// how many it added.
func addLifespanTolerations(spec *corev1.PodSpec, days int) int {
	added := 0
	for d := days; d <= maxLifespanDays; d++ {
		t := corev1.Toleration{
			Key:      TaintLifespanRemaining,
			Operator: corev1.TolerationOpEqual,
			Value:    strconv.Itoa(d),
			Effect:   corev1.TaintEffectNoSchedule,
		}
		if hasToleration(spec.Tolerations, t) {
			continue
		}
		spec.Tolerations = append(spec.Tolerations, t)
		added++
	}
	return added
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
