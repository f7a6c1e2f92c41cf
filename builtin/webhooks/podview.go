package webhooks

import (
	"fmt"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/hookback/hookback/admission"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// createdPodFields is every field of a created pod that pod-lifespan and
// pod-sidecar judge, and that their Warning Events name (podEventTarget).
// Decoding only these, not a whole typed pod, skips the rest of the object
// (managedFields, volumes, env, resources...) in one pass: through the
// apiserver the handlers' typed decode was a third of each call
// (bench/JOURNAL.md, "One validating pass per decode"). A field read here that is not listed is read as
// empty: TestCreatedPodKeepsWhatHandlersRead compares every handler's
// answer, Events and logs on slim and whole pods.
type createdPodFields struct {
	Metadata struct {
		Name            string                  `json:"name"`
		GenerateName    string                  `json:"generateName"`
		Namespace       string                  `json:"namespace"`
		UID             types.UID               `json:"uid"`
		ResourceVersion string                  `json:"resourceVersion"`
		Labels          map[string]string       `json:"labels"`
		Annotations     map[string]string       `json:"annotations"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		Tolerations    []corev1.Toleration `json:"tolerations"`
		Containers     []podContainer      `json:"containers"`
		InitContainers []podContainer      `json:"initContainers"`
	} `json:"spec"`
}

// podContainer is what pod-sidecar reads of a container: its name and ports.
type podContainer struct {
	Name  string                 `json:"name"`
	Ports []corev1.ContainerPort `json:"ports"`
}

// decodeCreatedPod decodes the fields of createdPodFields from the request's
// object into a pod holding only them. It uses the transport's decoder
// (admission.DecodeReview's): one validating pass.
func decodeCreatedPod(req admission.Request) (*corev1.Pod, error) {
	if len(req.Object.Raw) == 0 {
		return nil, errNoObject
	}
	var f createdPodFields
	if err := jsonv2.Unmarshal(req.Object.Raw, &f); err != nil {
		return nil, fmt.Errorf("decode pod: %w", err)
	}
	m := &f.Metadata
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, GenerateName: m.GenerateName, Namespace: m.Namespace, UID: m.UID,
			ResourceVersion: m.ResourceVersion, Labels: m.Labels, Annotations: m.Annotations, OwnerReferences: m.OwnerReferences},
		Spec: corev1.PodSpec{Tolerations: f.Spec.Tolerations, Containers: containers(f.Spec.Containers),
			InitContainers: containers(f.Spec.InitContainers)},
	}
	return pod, nil
}

func containers(in []podContainer) []corev1.Container {
	if in == nil {
		return nil
	}
	out := make([]corev1.Container, len(in))
	for i, c := range in {
		out[i] = corev1.Container{Name: c.Name, Ports: c.Ports}
	}
	return out
}
