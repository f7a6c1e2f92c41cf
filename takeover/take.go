package takeover

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hookback/hookback/internal/jsonpatch"
	"github.com/hookback/hookback/registration"
)

// Taker takes operators over for one session and gives them back.
type Taker struct {
	Clients
	// Session labels what is changed; LeaseRef (the session Lease,
	// namespace/name) is annotated, so a later run can tell a dead
	// session's take-over.
	Session, LeaseRef string
	Log               *slog.Logger
	// Now is the clock of the Leases' renew times (nil: time.Now).
	Now func() time.Time
	// told are the objects said to be changed by someone else: said once,
	// and then left as they are (never fought).
	mu   sync.Mutex
	told map[string]bool
}

func (t *Taker) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// tell says once per object that someone else changed what the take-over
// set.
func (t *Taker) tell(key, msg string, attrs ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.told[key] {
		return
	}
	if t.told == nil {
		t.told = map[string]bool{}
	}
	t.told[key] = true
	t.Log.Warn(msg, attrs...)
}

// Redirects are the webhooks to put in place of the operator's, by
// configuration (Configuration.Key) and webhook name: your manifests'
// webhooks as hookback registers them (pointed at it, scoped, failing open).
type Redirects map[string]map[string]any

// Take takes op over: its webhook configurations are redirected (before
// the Deployment stops, so no call finds it gone), the CA injectors' annotations
// on them and on its CRDs set aside, and the Deployment scaled to zero.
// A take-over this session left behind (a crash) keeps what it saved then.
func (t *Taker) Take(ctx context.Context, op *Operator, to Redirects) error {
	for _, c := range op.Configurations {
		if err := t.takeConfiguration(ctx, c, to[c.Key()]); err != nil {
			return err
		}
	}
	for _, name := range op.CRDs {
		if err := t.takeCRD(ctx, name); err != nil {
			return err
		}
	}
	return t.scaleDown(ctx, op)
}

// owned reads o's take-over state: ok false when it has none, an error
// when another session holds it.
func (t *Taker) owned(what string, labels, anns map[string]string) (st state, ok bool, err error) {
	raw, has := anns[AnnotationState]
	if !has {
		return state{}, false, nil
	}
	if s := labels[registration.LabelSession]; s != t.Session {
		return state{}, false, fmt.Errorf("%s is taken over by hookback session %q already: stop that session, or run `hookback cleanup --session %s`", what, s, s)
	}
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return state{}, false, fmt.Errorf("%s: annotation %s is not JSON: %w (run `hookback cleanup --session %s`, or remove it by hand)", what, AnnotationState, err, t.Session)
	}
	return st, true, nil
}

func (t *Taker) takeConfiguration(ctx context.Context, c Configuration, to map[string]any) error {
	res := t.Dynamic.Resource(hookResources[c.Kind])
	live, err := res.Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("take over %s %q: %w", c.Kind, c.Name, err)
	}
	what := c.Kind + " " + c.Name
	st, had, err := t.owned(what, live.GetLabels(), live.GetAnnotations())
	if err != nil {
		return err
	}
	hooks, _, _ := unstructured.NestedSlice(live.Object, "webhooks")
	if changed := rewritten(hooks, st.Redirected); had && len(changed) > 0 {
		t.tellRewritten(c, changed)
		return nil
	}
	if !had {
		st = state{Webhooks: hooks, Annotations: injectors(live.GetAnnotations())}
	}
	out, redirected, missing := substitute(hooks, c, to)
	st.Redirected = redirected
	for _, name := range missing {
		t.Log.Warn("webhook of a taken-over configuration that your manifests do not have: it still calls the operator's Service, which has no pods now",
			"configuration", what, "webhook", name)
	}
	ops := []patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: live.GetResourceVersion()},
		{Op: "replace", Path: "/webhooks", Value: out}}
	ops = append(ops, jsonpatch.RemoveOps("/metadata/annotations", live.GetAnnotations(), 1, registration.CAInjectors...)...)
	ops = append(ops, t.ours(live.GetLabels(), live.GetAnnotations(), st)...)
	if _, err := res.Patch(ctx, c.Name, types.JSONPatchType, jsonpatch.Encode(ops), metav1.PatchOptions{FieldManager: registration.FieldManager}); err != nil {
		return fmt.Errorf("redirect %s %q to hookback: %w", c.Kind, c.Name, err)
	}
	t.Log.Info("webhook configuration taken over: its webhooks call hookback under the same name until the session ends",
		"configuration", what, "webhooks", len(st.Redirected), "injectors set aside", len(st.Annotations))
	return nil
}

// substitute puts, in hooks, the webhook of to of the same name in place
// of each of c's; the others stay. It returns the webhooks, the names
// redirected and those to has none for.
func substitute(hooks []any, c Configuration, to map[string]any) (out []any, redirected, missing []string) {
	out = make([]any, len(hooks))
	for i, h := range hooks {
		hm, _ := h.(map[string]any)
		name, _ := hm["name"].(string)
		out[i] = h
		if !slices.Contains(c.Webhooks, name) {
			continue
		}
		if r, ok := to[name]; ok {
			out[i] = r
			redirected = append(redirected, name)
			continue
		}
		missing = append(missing, name)
	}
	return out, redirected, missing
}

// Preview is live (c's configuration as stored) as Take would leave it:
// what `hookback render --take-over` prints.
func Preview(live *unstructured.Unstructured, c Configuration, to map[string]any) *unstructured.Unstructured {
	o := live.DeepCopy()
	hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
	out, _, _ := substitute(hooks, c, to)
	_ = unstructured.SetNestedSlice(o.Object, out, "webhooks") // JSON values read from o: cannot fail
	anns := o.GetAnnotations()
	for _, a := range registration.CAInjectors {
		delete(anns, a)
	}
	o.SetAnnotations(anns)
	for _, f := range []string{"resourceVersion", "uid", "generation", "creationTimestamp", "managedFields"} {
		unstructured.RemoveNestedField(o.Object, "metadata", f)
	}
	return o
}

// injectors are the CA injectors' annotations among anns; nil for none.
func injectors(anns map[string]string) map[string]string {
	var out map[string]string
	for _, a := range registration.CAInjectors {
		if v, ok := anns[a]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[a] = v
		}
	}
	return out
}

// takeCRD sets a CRD's CA injectors' annotations aside: cert-manager's
// cainjector would otherwise write its CA over hookback's in the
// redirected conversion. The conversion itself is redirected (and
// restored) as every CRD's is (registration.CRDs).
func (t *Taker) takeCRD(ctx context.Context, name string) error {
	res := t.Dynamic.Resource(crdResource)
	live, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("take over CustomResourceDefinition %q: %w", name, err)
	}
	st, had, err := t.owned("CustomResourceDefinition "+name, live.GetLabels(), live.GetAnnotations())
	if err != nil || had {
		return err
	}
	st.Annotations = injectors(live.GetAnnotations())
	if st.Annotations == nil {
		return nil
	}
	ops := []patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: live.GetResourceVersion()}}
	ops = append(ops, jsonpatch.RemoveOps("/metadata/annotations", live.GetAnnotations(), 1, registration.CAInjectors...)...)
	ops = append(ops, t.ours(live.GetLabels(), live.GetAnnotations(), st)...)
	if _, err := res.Patch(ctx, name, types.JSONPatchType, jsonpatch.Encode(ops), metav1.PatchOptions{FieldManager: registration.FieldManager}); err != nil {
		return fmt.Errorf("set aside the CA injection of CustomResourceDefinition %q: %w", name, err)
	}
	t.Log.Info("CA injection of a taken-over CRD set aside for the session", "crd", name, "annotations", len(st.Annotations))
	return nil
}

// scaleDown scales op's Deployment to zero, remembering its replicas.
func (t *Taker) scaleDown(ctx context.Context, op *Operator) error {
	deps := t.Client.AppsV1().Deployments(op.Namespace)
	d, err := deps.Get(ctx, op.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("take over %s: %w", op.Target, err)
	}
	st, had, err := t.owned("Deployment "+op.Namespace+"/"+op.Name, d.Labels, d.Annotations)
	if err != nil {
		return err
	}
	if had && d.Spec.Replicas != nil && *d.Spec.Replicas != 0 {
		t.tellScaled(op, *d.Spec.Replicas)
		op.Replicas = *st.Replicas
		return nil
	}
	if !had {
		r := int32(1)
		if d.Spec.Replicas != nil {
			r = *d.Spec.Replicas
		}
		st = state{Replicas: &r}
	}
	op.Replicas = *st.Replicas
	ops := []patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: d.ResourceVersion},
		{Op: "add", Path: "/spec/replicas", Value: 0}}
	ops = append(ops, t.ours(d.Labels, d.Annotations, st)...)
	if _, err := deps.Patch(ctx, op.Name, types.JSONPatchType, jsonpatch.Encode(ops), metav1.PatchOptions{FieldManager: registration.FieldManager}); err != nil {
		return fmt.Errorf("scale %s to zero: %w", op.Target, err)
	}
	t.Log.Info("Deployment scaled to zero for the session; its replicas are given back at exit", "deployment", op.Namespace+"/"+op.Name, "replicas", op.Replicas)
	return nil
}
