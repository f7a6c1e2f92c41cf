package webhooks

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
)

// Annotations that ask pod-sidecar for an xxl-agent container.
const (
	// AnnotationSidecarEnable turns injection on ("true", "1", ... as
	// strconv.ParseBool reads them).
	AnnotationSidecarEnable = "xxl-agent/enable"
	// AnnotationSidecarAdminAddress is the XXL-JOB admin the agent registers
	// with (XXL_JOB_ADDR).
	AnnotationSidecarAdminAddress = "xxl-agent/admin-address"
	// AnnotationSidecarTargetContainer names the pod's container the agent
	// works for (CONTAINER_NAME); it must exist.
	AnnotationSidecarTargetContainer = "xxl-agent/target-container"
	// AnnotationSidecarJobName is the executor's job name (XXL_JOB_NAME).
	AnnotationSidecarJobName = "xxl-agent/job-name"
)

// The injected container.
const (
	SidecarContainerName = "xxl-agent"
	SidecarPortName      = "http-xxl-agent"
	SidecarPort          = 9999
)

// sidecarRequired are the annotations injection needs besides enable, in the
// order a Warning Event lists missing ones.
var sidecarRequired = []string{AnnotationSidecarAdminAddress, AnnotationSidecarTargetContainer, AnnotationSidecarJobName}

// sidecarHandler injects the xxl-agent container (/mutate-pod-sidecar, pods
// CREATE).
type sidecarHandler struct {
	image  string
	log    *slog.Logger
	events eventer
}

// Handle implements admission.Handler. Dry-run requests are mutated like any
// other, so a server-side dry run shows what would be created; only the
// Events are skipped.
func (h *sidecarHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	pod, ok := createdPod(req, h.log)
	if !ok {
		return admission.Allowed("")
	}
	return h.judge(req, pod)
}

// judge decides a created pod, decoded by decodeCreatedPod.
func (h *sidecarHandler) judge(req admission.Request, pod *corev1.Pod) admission.Response {
	enable, ok := pod.Annotations[AnnotationSidecarEnable]
	if !ok {
		return admission.Allowed("")
	}
	on, err := strconv.ParseBool(enable)
	if err != nil {
		return h.skip(req, pod, fmt.Sprintf("annotation %s=%s is not a boolean", AnnotationSidecarEnable, short(enable)))
	}
	if !on {
		return admission.Allowed("")
	}
	if hasOurSidecar(pod) {
		// Reinvocation (or a pod declaring the agent itself): already there.
		return admission.Allowed("")
	}
	if reason := h.problem(pod); reason != "" {
		return h.skip(req, pod, reason)
	}
	// Appended to the raw object's containers: the pod's own containers,
	// and any field this library does not know, stay exactly as sent.
	return admission.Patched("", admission.AppendOps("/spec/containers", len(pod.Spec.Containers) > 0, h.sidecar(pod.Annotations))...)
}

// skip lets the pod through unchanged and says why, as a Warning Event and as
// an admission warning the client prints.
func (h *sidecarHandler) skip(req admission.Request, pod *corev1.Pod, why string) admission.Response {
	note := "xxl-agent sidecar not injected: " + why
	h.events.warn(req, pod, ReasonSidecarSkipped, actionInjectSidecar, note)
	return admission.Allowed("").WithWarnings(note)
}

// problem explains why the sidecar cannot be injected into pod, or returns "".
func (h *sidecarHandler) problem(pod *corev1.Pod) string {
	var missing []string
	for _, key := range sidecarRequired {
		if strings.TrimSpace(pod.Annotations[key]) == "" {
			missing = append(missing, strconv.Quote(key))
		}
	}
	if len(missing) > 0 {
		return "missing annotation " + strings.Join(missing, ", ")
	}
	target := pod.Annotations[AnnotationSidecarTargetContainer]
	if !hasContainer(pod.Spec.Containers, target) {
		return fmt.Sprintf("target container %s (annotation %s) is not in the pod", short(target), AnnotationSidecarTargetContainer)
	}
	return clash(pod)
}

// clash explains why the agent's container name or port would collide with
// one the pod already uses, or returns "". It runs once our own container is
// known to be absent, so any container of that name is someone else's. Init
// containers count: names are unique across both lists, and sidecar-style
// init containers share the pod's ports.
func clash(pod *corev1.Pod) string {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			c := &list[i]
			if c.Name == SidecarContainerName {
				return fmt.Sprintf("the pod already has a container named %q that is not the agent", SidecarContainerName)
			}
			for _, p := range c.Ports {
				if p.Name == SidecarPortName {
					return fmt.Sprintf("container %q already uses port name %q", c.Name, SidecarPortName)
				}
				if p.ContainerPort == SidecarPort && (p.Protocol == "" || p.Protocol == corev1.ProtocolTCP) {
					return fmt.Sprintf("container %q already uses port %d", c.Name, SidecarPort)
				}
			}
		}
	}
	return ""
}

// isOurSidecar recognises the container this webhook injects: its name and
// its named port. The image is not compared, so a registry-rewriting webhook
// or a changed --sidecar-image does not make a second injection.
func isOurSidecar(c *corev1.Container) bool {
	if c.Name != SidecarContainerName {
		return false
	}
	for _, p := range c.Ports {
		if p.Name == SidecarPortName && p.ContainerPort == SidecarPort {
			return true
		}
	}
	return false
}

func hasOurSidecar(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if isOurSidecar(&pod.Spec.Containers[i]) {
			return true
		}
	}
	return false
}

func hasContainer(list []corev1.Container, name string) bool {
	for i := range list {
		if list[i].Name == name {
			return true
		}
	}
	return false
}

// sidecar builds the agent container from the pod's annotations.
func (h *sidecarHandler) sidecar(ann map[string]string) corev1.Container {
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path}}
	}
	return corev1.Container{
		Name:  SidecarContainerName,
		Image: h.image,
		Ports: []corev1.ContainerPort{{Name: SidecarPortName, ContainerPort: SidecarPort, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "CONTAINER_NAME", Value: ann[AnnotationSidecarTargetContainer]},
			{Name: "XXL_JOB_NAME", Value: ann[AnnotationSidecarJobName]},
			{Name: "XXL_JOB_ADDR", Value: ann[AnnotationSidecarAdminAddress]},
			// The downward API: a pod from generateName has no name until
			// after admission, so it cannot be written in here.
			{Name: "NAMESPACE", ValueFrom: field("metadata.namespace")},
			{Name: "POD_NAME", ValueFrom: field("metadata.name")},
		},
	}
}
