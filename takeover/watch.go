package takeover

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Watch checks every interval, until ctx is done, whether someone else
// undid the take-over of ops (a re-deploy scaled the Deployment up, the
// operator or a Helm upgrade re-wrote its configurations) and says so
// once per object; it changes nothing, so nothing is fought.
func (t *Taker) Watch(ctx context.Context, ops []*Operator, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, op := range ops {
			t.check(ctx, op)
		}
	}
}

func (t *Taker) check(ctx context.Context, op *Operator) {
	d, err := t.Client.AppsV1().Deployments(op.Namespace).Get(ctx, op.Name, metav1.GetOptions{})
	if err == nil && d.Spec.Replicas != nil && *d.Spec.Replicas != 0 {
		t.tellScaled(op, *d.Spec.Replicas)
	}
	for _, c := range op.Configurations {
		o, err := t.Dynamic.Resource(hookResources[c.Kind]).Get(ctx, c.Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		st, had, err := t.owned(c.Kind+" "+c.Name, o.GetLabels(), o.GetAnnotations())
		if err != nil || !had {
			continue
		}
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		if changed := rewritten(hooks, st.Redirected); len(changed) > 0 {
			t.tellRewritten(c, changed)
		}
	}
}

// tellScaled says once that someone else scaled op's Deployment up.
func (t *Taker) tellScaled(op *Operator, replicas int32) {
	t.tell("Deployment/"+op.Namespace+"/"+op.Name, "Deployment scaled up by someone else since hookback took it over (re-deployed, an autoscaler?): left as they made it, its pods race your manager; restart hookback to take it over again",
		"deployment", op.Namespace+"/"+op.Name, "replicas", replicas)
}

// tellRewritten says once that someone else re-wrote c's webhooks.
func (t *Taker) tellRewritten(c Configuration, webhooks []string) {
	t.tell(c.Key(), "webhook configuration re-written by someone else (the operator re-deployed?) since hookback took it over: left as they made it, its webhooks no longer reach hookback; restart hookback to take it over again",
		"configuration", c.Kind+" "+c.Name, "webhooks", strings.Join(webhooks, ","))
}
