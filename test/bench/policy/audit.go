package main

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/policy"
	"github.com/hookback/hookback/session"
)

// podLister serves n pods from memory: the audit's listing is measured
// against a cluster by bench/audit; this figure is the evaluation's.
type podLister struct{ n int }

var _ audit.Lister = podLister{}

func (podLister) Resources(context.Context) ([]audit.APIResource, error) {
	return []audit.APIResource{{
		GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Namespaced: true, Listable: true, Preferred: true,
	}}, nil
}

func (l podLister) List(_ context.Context, gvr schema.GroupVersionResource, each func(map[string]any) error) error {
	if gvr.Resource != "pods" {
		return nil
	}
	for i := range l.n {
		pod := map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": fmt.Sprintf("pod-%d", i), "namespace": fmt.Sprintf("ns-%d", i%20), "labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "image": "registry.example/app:1.0", "ports": []any{map[string]any{"containerPort": int64(8080)}}},
				map[string]any{"name": "side", "image": "registry.example/side:latest"},
			}},
		}
		if err := each(pod); err != nil {
			return err
		}
	}
	return nil
}

var podRules = []admissionregistrationv1.RuleWithOperations{{
	Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
	Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
}}

func allowWebhooks(n int) []audit.Webhook {
	var hooks []audit.Webhook
	for i := range n {
		hooks = append(hooks, audit.Webhook{
			Name: fmt.Sprintf("allow-%d", i), Rules: podRules, ReviewVersions: []string{"v1"},
			Handler: admission.HandlerFunc(func(context.Context, admission.Request) admission.Response { return admission.Allowed("") }),
		})
	}
	return hooks
}

func policyWebhooks(e *policy.Engine) []audit.Webhook { return session.PolicyWebhooks(e) }

func auditOnce(pods int, hooks []audit.Webhook) (time.Duration, int, error) {
	start := time.Now()
	res, err := audit.Run(context.Background(), audit.Options{Webhooks: hooks, Lister: podLister{n: pods}, Concurrency: 8})
	d := time.Since(start)
	if err != nil {
		return 0, 0, err
	}
	c := audit.Count(res)
	if c.Errors > 0 {
		return 0, 0, fmt.Errorf("%d audit errors, e.g. %s", c.Errors, firstError(res))
	}
	return d, c.Reviews, nil
}

func firstError(res []audit.Result) string {
	for _, r := range res {
		if r.Result == audit.Error {
			return r.Message
		}
	}
	return ""
}
