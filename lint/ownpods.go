package lint

// OwnPod is a pod a webhook's own Service needs to come back: one of its
// workload's pods, made from the workload's template, in the Service's
// namespace. hookback drill sends it to see the self-deadlock happen.
type OwnPod struct {
	// Workload is "Kind/name" of the workload whose template it is.
	Workload  string
	Namespace string
	// Pod is the pod as an unstructured object.
	Pod map[string]any
}

// OwnPods are the pods of the workloads behind the Services the webhooks
// call, found as the self-deadlock rule finds them; each once.
func (in *Input) OwnPods() []OwnPod {
	var out []OwnPod
	seen := map[string]bool{}
	for _, h := range in.Hooks {
		ref := h.ClientConfig.Service
		if ref == nil {
			continue
		}
		s := in.serviceOf(h)
		if s == nil {
			continue
		}
		for _, w := range in.backends(s, ref.Namespace) {
			key := ref.Namespace + "/" + w.obj.Kind + "/" + w.obj.Name
			if seen[key] {
				continue
			}
			seen[key] = true
			md, _ := w.template["metadata"].(map[string]any)
			pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": withNameNS(md, w.obj.Name+"-hookback-drill", ref.Namespace)}
			if spec, ok := w.template["spec"]; ok {
				pod["spec"] = spec
			}
			out = append(out, OwnPod{Workload: w.obj.Kind + "/" + w.obj.Name, Namespace: ref.Namespace, Pod: pod})
		}
	}
	return out
}
