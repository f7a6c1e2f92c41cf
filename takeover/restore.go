package takeover

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/hookback/hookback/internal/jsonpatch"
	"github.com/hookback/hookback/registration"
)

// Restore gives back everything this session took over, but what keep
// selects (by Key: Deployment/NS/NAME, KIND/NAME, CustomResourceDefinition/NAME;
// nil keeps nothing): Deployments first, so their pods start while the
// configurations still call hookback, each with the Leases released in its
// namespace (GiveBackLeases), then the configurations and CRDs.
func (t *Taker) Restore(ctx context.Context, keep func(key string) bool) ([]string, error) {
	if keep == nil {
		keep = func(string) bool { return false }
	}
	// By the session label alone: a re-deploy (kubectl apply of the
	// scaffold's app.kubernetes.io/managed-by: kustomize) puts back the
	// label hookback's replaced, and leaves the session's.
	sel := registration.LabelSession + "=" + t.Session
	var restored []string
	var errs []error
	deps, err := t.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil && !apierrors.IsForbidden(err) {
		errs = append(errs, fmt.Errorf("list the Deployments session %s took over: %w", t.Session, err))
	}
	if deps != nil {
		for i := range deps.Items {
			d := &deps.Items[i]
			key := "Deployment/" + d.Namespace + "/" + d.Name
			if _, ok := d.Annotations[AnnotationState]; !ok || keep(key) {
				continue
			}
			if err := t.restoreDeployment(ctx, d); err != nil {
				errs = append(errs, err)
				continue
			}
			restored = append(restored, key)
			// Its manager's Lease after its replicas: released now, the
			// restored pods lead at their first try.
			leases, err := t.GiveBackLeases(ctx, d.Namespace, t.now)
			restored = append(restored, leases...)
			errs = append(errs, err)
		}
	}
	for _, kind := range []string{registration.KindMutatingHook, registration.KindValidatingHook, "CustomResourceDefinition"} {
		res := t.Dynamic.Resource(crdResource)
		if kind != "CustomResourceDefinition" {
			res = t.Dynamic.Resource(hookResources[kind])
		}
		list, err := res.List(ctx, metav1.ListOptions{LabelSelector: sel})
		if apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list the %ss session %s took over: %w", kind, t.Session, err))
			continue
		}
		for i := range list.Items {
			o := &list.Items[i]
			key := kind + "/" + o.GetName()
			if _, ok := o.GetAnnotations()[AnnotationState]; !ok || keep(key) {
				continue
			}
			if err := t.restoreObject(ctx, kind, o); err != nil {
				errs = append(errs, err)
				continue
			}
			restored = append(restored, key)
		}
	}
	return restored, errors.Join(errs...)
}

func decodeState(what string, anns map[string]string) (state, error) {
	var st state
	if err := utiljson.Unmarshal([]byte(anns[AnnotationState]), &st); err != nil {
		return st, fmt.Errorf("%s: annotation %s is not JSON: %w (put it back by hand, then remove the annotation)", what, AnnotationState, err)
	}
	return st, nil
}

// restoreDeployment gives a Deployment its replicas back, unless someone
// scaled it meanwhile: their replicas are kept.
func (t *Taker) restoreDeployment(ctx context.Context, d *appsv1.Deployment) error {
	what := "Deployment " + d.Namespace + "/" + d.Name
	st, err := decodeState(what, d.Annotations)
	if err != nil {
		return err
	}
	ops := []patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: d.ResourceVersion}}
	switch {
	case st.Replicas == nil:
	case d.Spec.Replicas != nil && *d.Spec.Replicas != 0:
		t.Log.Warn("Deployment scaled by someone else since hookback took it over: its replicas are kept as they are",
			"deployment", d.Namespace+"/"+d.Name, "replicas", *d.Spec.Replicas, "before", *st.Replicas)
	default:
		ops = append(ops, patchOp{Op: "add", Path: "/spec/replicas", Value: *st.Replicas})
	}
	ops = append(ops, unmarkOps(d.Labels, d.Annotations, st)...)
	_, err = t.Client.AppsV1().Deployments(d.Namespace).Patch(ctx, d.Name, types.JSONPatchType, jsonpatch.Encode(ops), metav1.PatchOptions{FieldManager: registration.FieldManager})
	if err != nil {
		return fmt.Errorf("give back %s: %w", what, err)
	}
	t.Log.Info("Deployment given back", "deployment", d.Namespace+"/"+d.Name)
	return nil
}

// restoreObject gives a configuration its webhooks back (unless someone
// else re-wrote them meanwhile) and a configuration or CRD its CA
// injectors' annotations (unless someone set them again).
func (t *Taker) restoreObject(ctx context.Context, kind string, o *unstructured.Unstructured) error {
	what := kind + " " + o.GetName()
	st, err := decodeState(what, o.GetAnnotations())
	if err != nil {
		return err
	}
	ops := []patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: o.GetResourceVersion()}}
	if kind != "CustomResourceDefinition" {
		hooks, _, _ := unstructured.NestedSlice(o.Object, "webhooks")
		if changed := rewritten(hooks, st.Redirected); len(changed) > 0 {
			t.Log.Warn("webhook configuration re-written by someone else since hookback took it over: kept as it is",
				"configuration", what, "webhooks", strings.Join(changed, ","))
		} else {
			ops = append(ops, patchOp{Op: "replace", Path: "/webhooks", Value: st.Webhooks})
		}
	}
	anns := o.GetAnnotations()
	var add map[string]string
	for k, v := range st.Annotations {
		if _, set := anns[k]; !set {
			if add == nil {
				add = map[string]string{}
			}
			add[k] = v
		}
	}
	if add != nil {
		ops = append(ops, jsonpatch.MapOps("/metadata/annotations", true, add)...)
	}
	unmark, err := unmarkLentOps(what, o.GetLabels(), anns, len(add), st)
	if err != nil {
		return err
	}
	ops = append(ops, unmark...)
	res := t.Dynamic.Resource(crdResource)
	if kind != "CustomResourceDefinition" {
		res = t.Dynamic.Resource(hookResources[kind])
	}
	if _, err := res.Patch(ctx, o.GetName(), types.JSONPatchType, jsonpatch.Encode(ops), metav1.PatchOptions{FieldManager: registration.FieldManager}); err != nil {
		return fmt.Errorf("give back %s: %w", what, err)
	}
	t.Log.Info("given back", "object", what)
	return nil
}

// unmarkLentOps drops the take-over's marks from a configuration or CRD
// whose annotations are anns (the same patch puts added back). A CRD whose
// conversion stays redirected keeps hookback's labels and the Lease
// reference until that is restored too (registration.CRDs), and is handed
// the labels the take-over saved, for that restore to put back; else the
// labels saved by either are put back now.
func unmarkLentOps(what string, labels, anns map[string]string, added int, st state) ([]patchOp, error) {
	saved, err := registration.SavedLabels(what, anns, st.Labels)
	if err != nil {
		return nil, err
	}
	if _, conv := anns[registration.AnnotationConversion]; conv {
		ops := jsonpatch.RemoveOps("/metadata/annotations", anns, added, AnnotationState)
		if l := registration.EncodeLabels(saved); l != "" && l != anns[registration.AnnotationLabels] {
			ops = append(ops, patchOp{Op: "add", Path: "/metadata/annotations/" + jsonpatch.Pointer(registration.AnnotationLabels), Value: l})
		}
		return ops, nil
	}
	ops := jsonpatch.RemoveOps("/metadata/annotations", anns, added, AnnotationState, registration.AnnotationLease, registration.AnnotationLabels)
	return append(ops, registration.UnlabelOps(labels, saved)...), nil
}

// rewritten names the webhooks of redirected that no longer call
// hookback: its route paths start with /upstream/ (by url, or with
// --tunnel by the relay's Service).
func rewritten(hooks []any, redirected []string) []string {
	var out []string
	for _, h := range hooks {
		hm, _ := h.(map[string]any)
		name, _ := hm["name"].(string)
		if !slices.Contains(redirected, name) {
			continue
		}
		url, _, _ := unstructured.NestedString(hm, "clientConfig", "url")
		path, _, _ := unstructured.NestedString(hm, "clientConfig", "service", "path")
		if !strings.Contains(url, "/upstream/") && !strings.HasPrefix(path, "/upstream/") {
			out = append(out, name)
		}
	}
	return out
}

// RestoreStale gives back what the sessions opts select took over (dead
// ones, after a crash; named ones for `hookback cleanup`), before their
// configurations are deleted. It returns the sessions it restored.
func RestoreStale(ctx context.Context, c Clients, opts registration.CleanupOptions, log *slog.Logger) ([]string, error) {
	sessions, err := sessionsOf(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	var errs []error
	for s, ref := range sessions {
		sel, err := opts.Selects(ctx, c.Client, s, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !sel {
			continue
		}
		one := &Taker{Clients: c, Session: s, Log: log}
		if _, err := one.Restore(ctx, nil); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out, errors.Join(errs...)
}

// sessionsOf are the sessions that took something over, with the Lease
// each annotated.
func sessionsOf(ctx context.Context, c Clients) (map[string]string, error) {
	out := map[string]string{}
	add := func(labels, anns map[string]string) {
		if _, ok := anns[AnnotationState]; ok && labels[registration.LabelSession] != "" {
			out[labels[registration.LabelSession]] = anns[registration.AnnotationLease]
		}
	}
	deps, err := c.Client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: registration.LabelSession})
	if err != nil && !apierrors.IsForbidden(err) {
		return nil, fmt.Errorf("list Deployments taken over by hookback: %w", err)
	}
	if deps != nil {
		for _, d := range deps.Items {
			add(d.Labels, d.Annotations)
		}
	}
	for _, gvr := range append(slices.Collect(maps.Values(hookResources)), crdResource) {
		list, err := c.Dynamic.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: registration.LabelSession})
		if apierrors.IsForbidden(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s taken over by hookback: %w", gvr.Resource, err)
		}
		for _, o := range list.Items {
			add(o.GetLabels(), o.GetAnnotations())
		}
	}
	return out, nil
}

// Original is o as it was before a take-over or a conversion redirect
// that a crash left in place (its saved webhooks, conversion and CA
// injectors' annotations back, hookback's marks gone): what to read as the
// operator's object; o itself when hookback changed nothing of it.
func Original(o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	_, taken := o.GetAnnotations()[AnnotationState]
	conv, redirected := o.GetAnnotations()[registration.AnnotationConversion]
	if !taken && !redirected {
		return o, nil
	}
	out := o.DeepCopy()
	if redirected {
		if err := putConversion(out, conv); err != nil {
			return nil, err
		}
	}
	if !taken {
		return out, nil
	}
	st, err := decodeState(o.GetKind()+" "+o.GetName(), o.GetAnnotations())
	if err != nil {
		return nil, err
	}
	if st.Webhooks != nil {
		if err := unstructured.SetNestedSlice(out.Object, st.Webhooks, "webhooks"); err != nil {
			return nil, err
		}
	}
	anns := out.GetAnnotations()
	delete(anns, AnnotationState)
	delete(anns, registration.AnnotationLease)
	for k, v := range st.Annotations {
		anns[k] = v
	}
	out.SetAnnotations(anns)
	return out, nil
}

// putConversion sets the conversion a redirect saved
// (registration.AnnotationConversion) back on a CRD read from the cluster.
func putConversion(o *unstructured.Unstructured, saved string) error {
	var conv any
	if err := utiljson.Unmarshal([]byte(saved), &conv); err != nil {
		return fmt.Errorf("CustomResourceDefinition %q: annotation %s: %w", o.GetName(), registration.AnnotationConversion, err)
	}
	if conv == nil {
		unstructured.RemoveNestedField(o.Object, "spec", "conversion")
		return nil
	}
	return unstructured.SetNestedField(o.Object, conv, "spec", "conversion")
}
