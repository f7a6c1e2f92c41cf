package lint

import (
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

const (
	create = admissionregistrationv1.Create
	update = admissionregistrationv1.Update
)

// controller is the service account of a kube-controller-manager
// controller, as request.userInfo.username.
func controller(name string) string { return "system:serviceaccount:kube-system:" + name }

// recoveryRequests are what the cluster sends to bring a webhook's
// Service back after its pods are gone: the workload's pods, the
// Deployment's ReplicaSets and rollout, the Service's EndpointSlices and
// Endpoints, in the Service's namespace.
func recoveryRequests(svc string, ns string, ws []workload, selector map[string]string) []request {
	var rs []request
	if len(ws) == 0 {
		// No workload in the input: its pods carry at least the Service's
		// selector.
		rs = append(rs, request{Version: "v1", Resource: "pods", Kind: "Pod", Op: create, Namespace: ns, Labels: selector, User: controller("replicaset-controller")})
	}
	for _, w := range ws {
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": w.obj.Name + "-hookback-lint", "namespace": ns}}
		if md, ok := w.template["metadata"].(map[string]any); ok {
			pod["metadata"] = withNameNS(md, w.obj.Name+"-hookback-lint", ns)
		}
		if spec, ok := w.template["spec"]; ok {
			pod["spec"] = spec
		}
		user := controller(w.creator)
		if w.creator == "" {
			user = "system:admin"
		}
		rs = append(rs, request{Version: "v1", Resource: "pods", Kind: "Pod", Op: create, Namespace: ns, Labels: w.labels, Object: pod, User: user})
		if w.obj.Kind == "Deployment" {
			dep := controller("deployment-controller")
			rs = append(rs,
				request{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Op: create, Namespace: ns, Labels: w.labels, User: dep},
				request{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Op: update, Namespace: ns, Labels: w.labels, User: dep},
				request{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Op: update, Namespace: ns, Labels: w.labels, User: "system:admin"})
		}
	}
	eps := map[string]string{"kubernetes.io/service-name": svc}
	for _, op := range []admissionregistrationv1.OperationType{create, update} {
		rs = append(rs,
			request{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Kind: "EndpointSlice", Op: op, Namespace: ns, Labels: eps, User: controller("endpointslice-controller")},
			request{Version: "v1", Resource: "endpoints", Kind: "Endpoints", Op: op, Namespace: ns, User: controller("endpoint-controller")})
	}
	return rs
}

func withNameNS(md map[string]any, name, ns string) map[string]any {
	out := map[string]any{"name": name, "namespace": ns}
	for k, v := range md {
		if k != "name" && k != "namespace" {
			out[k] = v
		}
	}
	return out
}

func checkSelfDeadlock(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		ref := h.ClientConfig.Service
		if !h.fails() || ref == nil {
			continue
		}
		var ws []workload
		var selector map[string]string
		if s := in.serviceOf(h); s != nil {
			ws, selector = in.backends(s, ref.Namespace), s.selector
		}
		var hit []string
		for _, req := range recoveryRequests(ref.Name, ref.Namespace, ws, selector) {
			if in.calledFor(h, req) {
				hit = append(hit, req.String())
			}
		}
		if len(hit) == 0 {
			continue
		}
		f := h.finding(r, Error, "rules", "failurePolicy Fail and called for what its own Service %s/%s needs to come back (%s): once its pods are gone, nothing recreates them until the configuration is deleted by hand",
			ref.Namespace, ref.Name, strings.Join(hit, "; "))
		f.Fix = excludeNamespaces(h, ref.Namespace)
		f.Advice = "exclude the webhook's own namespace (the patch), or set failurePolicy Ignore"
		fs = append(fs, f)
	}
	return fs
}

// controlPlaneNamespaces are where the control plane's own components
// write: leader election, node heartbeats, kube-proxy, DNS.
var controlPlaneNamespaces = []string{"kube-system", "kube-node-lease"}

func checkControlPlane(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		if !h.fails() {
			continue
		}
		sev, hit, nss := Severity(""), []string(nil), []string(nil)
		for _, ns := range controlPlaneNamespaces {
			for _, req := range probes(h, ns) {
				if !in.calledFor(h, req) {
					continue
				}
				hit = append(hit, req.String())
				if !slices.Contains(nss, ns) {
					nss = append(nss, ns)
				}
				if builtinGroup(req.Group) {
					sev = Error
				} else if sev == "" {
					// A custom resource in kube-system: the control plane
					// does not need it, its add-ons may.
					sev = Warning
				}
				break
			}
		}
		if len(hit) == 0 {
			continue
		}
		f := h.finding(r, sev, "namespaceSelector", "failurePolicy Fail and called for objects in %s (%s): while the webhook is down, the control plane's own components cannot write there",
			strings.Join(nss, ", "), strings.Join(hit, "; "))
		f.Fix = excludeNamespaces(h, nss...)
		fs = append(fs, f)
	}
	return fs
}

// probes are one namespaced request per group and resource the webhook's
// rules name, with a wildcard taken as pods (or the group's first
// resource): what the control plane would send there.
func probes(h *Hook, ns string) []request {
	var rs []request
	for _, rule := range h.Rules {
		if *rule.Scope == admissionregistrationv1.ClusterScope {
			continue
		}
		op := create
		if len(rule.Operations) > 0 && rule.Operations[0] != admissionregistrationv1.OperationAll {
			op = rule.Operations[0]
		}
		for _, g := range rule.APIGroups {
			if g == "*" {
				g = ""
			}
			for _, res := range rule.Resources {
				name, sub, _ := strings.Cut(res, "/")
				if name == "*" {
					name = wildcardProbe(g)
				}
				if sub == "*" {
					sub = ""
				}
				if clusterScoped[name] {
					continue
				}
				rs = append(rs, request{Group: g, Version: firstVersion(rule.APIVersions), Resource: name, Sub: sub, Kind: "Object",
					Op: op, Namespace: ns, User: "system:kube-controller-manager"})
			}
		}
	}
	return rs
}

func firstVersion(vs []string) string {
	if len(vs) == 0 || vs[0] == "*" {
		return "v1"
	}
	return vs[0]
}

// clusterScoped are built-in resources without a namespace.
var clusterScoped = map[string]bool{
	"namespaces": true, "nodes": true, "persistentvolumes": true, "clusterroles": true, "clusterrolebindings": true,
	"storageclasses": true, "customresourcedefinitions": true, "mutatingwebhookconfigurations": true,
	"validatingwebhookconfigurations": true, "validatingadmissionpolicies": true, "validatingadmissionpolicybindings": true,
	"mutatingadmissionpolicies": true, "mutatingadmissionpolicybindings": true, "priorityclasses": true,
	"csidrivers": true, "csinodes": true, "runtimeclasses": true, "certificatesigningrequests": true,
	"tokenreviews": true, "subjectaccessreviews": true, "selfsubjectaccessreviews": true, "selfsubjectreviews": true,
	"apiservices": true, "ingressclasses": true, "volumeattachments": true, "flowschemas": true,
	"prioritylevelconfigurations": true, "ipaddresses": true, "servicecidrs": true, "deviceclasses": true,
}

// builtinGroup: an API group the control plane itself writes (or "" core).
func builtinGroup(g string) bool {
	return g == "" || !strings.Contains(g, ".") || strings.HasSuffix(g, ".k8s.io")
}

// criticalRequests are what nodes and the control plane send all the time:
// a webhook that fails them makes nodes NotReady, loses leader election,
// or fails authentication.
var criticalRequests = []request{
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Op: update, Namespace: "kube-node-lease", User: "system:node:node-1"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Op: update, Namespace: "kube-system", User: "system:kube-controller-manager"},
	{Version: "v1", Resource: "nodes", Sub: "status", Kind: "Node", Op: update, User: "system:node:node-1"},
	{Version: "v1", Resource: "nodes", Kind: "Node", Op: update, User: "system:node:node-1"},
	{Version: "v1", Resource: "events", Kind: "Event", Op: create, Namespace: "default", User: "system:node:node-1"},
	{Group: "events.k8s.io", Version: "v1", Resource: "events", Kind: "Event", Op: create, Namespace: "default", User: "system:node:node-1"},
	{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews", Kind: "TokenReview", Op: create, User: "system:kube-apiserver"},
}

func checkCritical(in *Input, r *Rule) []Finding {
	var fs []Finding
	for _, h := range in.Hooks {
		if !h.fails() {
			continue
		}
		var hit []string
		for _, req := range criticalRequests {
			if in.calledFor(h, req) {
				hit = append(hit, req.String())
			}
		}
		if len(hit) == 0 {
			continue
		}
		f := h.finding(r, Error, "failurePolicy", "failurePolicy Fail and called for %s: while the webhook is down, nodes cannot renew their leases or report status, leader election fails, or tokens cannot be reviewed",
			strings.Join(hit, "; "))
		f.Fix = []PatchOp{{Op: "add", Path: h.pointer("failurePolicy"), Value: "Ignore"}}
		f.Advice = "or narrow the rules so they leave these resources out"
		fs = append(fs, f)
	}
	return fs
}

// excludeNamespaces is the patch that adds "kubernetes.io/metadata.name
// NotIn nss" to the webhook's namespaceSelector, ANDed with what is there.
func excludeNamespaces(h *Hook, nss ...string) []PatchOp {
	expr := map[string]any{"key": nameLabel, "operator": "NotIn", "values": nss}
	sel, ok := h.raw["namespaceSelector"].(map[string]any)
	switch {
	case !ok:
		return []PatchOp{{Op: "add", Path: h.pointer("namespaceSelector"), Value: map[string]any{"matchExpressions": []any{expr}}}}
	case sel["matchExpressions"] != nil:
		return []PatchOp{{Op: "add", Path: h.pointer("namespaceSelector/matchExpressions/-"), Value: expr}}
	}
	return []PatchOp{{Op: "add", Path: h.pointer("namespaceSelector/matchExpressions"), Value: []any{expr}}}
}
