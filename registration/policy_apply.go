package registration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// policyResource is one kind of admission policy object.
type policyResource struct {
	kind string
	gvr  schema.GroupVersionResource
}

// policyResources in deletion order: bindings first, so that the apiserver
// stops enforcing before a policy or a param goes.
var policyResources = []policyResource{
	{KindValidatingPolicyBinding, admissionV1("validatingadmissionpolicybindings")},
	{KindMutatingPolicyBinding, admissionV1("mutatingadmissionpolicybindings")},
	{KindValidatingPolicy, admissionV1("validatingadmissionpolicies")},
	{KindMutatingPolicy, admissionV1("mutatingadmissionpolicies")},
}

func admissionV1(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: resource}
}

func policyGVR(kind string) (schema.GroupVersionResource, bool) {
	for _, r := range policyResources {
		if r.kind == kind {
			return r.gvr, true
		}
	}
	return schema.GroupVersionResource{}, false
}

// ApplyPolicies server-side-applies the session's enforced policies:
// params, then policies, then bindings. Prepare them first
// (PreparePolicies).
func (r *Registrar) ApplyPolicies(ctx context.Context, p *EnforcedPolicies) error {
	for _, q := range p.Params {
		o := q.Object
		ri := r.Dynamic.Resource(q.Resource)
		var err error
		if q.Namespaced {
			_, err = ri.Namespace(o.GetNamespace()).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		} else {
			_, err = ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
		}
		if err != nil {
			return fmt.Errorf("apply param %s %s: %w", o.GetKind(), objectKey(o), err)
		}
	}
	for _, o := range append(append([]*unstructured.Unstructured{}, p.Policies...), p.Bindings...) {
		gvr, ok := policyGVR(o.GetKind())
		if !ok {
			return fmt.Errorf("%w: %s %q is not an admission policy kind", ErrPolicyEnforce, o.GetKind(), o.GetName())
		}
		if _, err := r.Dynamic.Resource(gvr).Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("apply %s %q: %w", o.GetKind(), o.GetName(), err)
		}
		r.Log.Info("enforcing", "kind", o.GetKind(), "name", o.GetName())
	}
	return nil
}

func objectKey(o *unstructured.Unstructured) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// servedPolicies are the policy resources the cluster serves at v1. A
// cluster that serves none has nothing of hookback's to clean up there.
func (r *Registrar) servedPolicies() ([]policyResource, error) {
	if r.Client == nil {
		return nil, nil
	}
	list, err := r.Client.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("discover admissionregistration.k8s.io/v1: %w", err)
	}
	var out []policyResource
	for _, pr := range policyResources {
		for _, ar := range list.APIResources {
			if ar.Name == pr.gvr.Resource {
				out = append(out, pr)
				break
			}
		}
	}
	return out, nil
}

// cannotList: a user who may not list a policy kind has none of
// hookback's to remove there (start --policy-enforce declares list with the
// rest it needs), so their cleanup does not fail on it.
func (r *Registrar) cannotList(err error, pr policyResource) bool {
	if apierrors.IsForbidden(err) {
		r.Log.Debug("may not list admission policies: none of this user's sessions enforced any", "resource", pr.gvr.Resource)
		return true
	}
	return false
}

// deletePolicies deletes the session's policies, bindings first, then the
// params recorded on its policies (only those labelled as the session's),
// then the policies. It never deletes what hookback's labels do not name
// as this session's.
func (r *Registrar) deletePolicies(ctx context.Context, session string) (int, error) {
	served, err := r.servedPolicies()
	if err != nil || len(served) == 0 {
		return 0, err
	}
	sel := ManagedSelector + "," + LabelSession + "=" + session
	deleted := 0
	var errs []error
	for _, pr := range served {
		list, err := r.Dynamic.Resource(pr.gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if r.cannotList(err, pr) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list %ss of session %s: %w", pr.kind, session, err))
			continue
		}
		for _, o := range list.Items {
			if pr.kind == KindValidatingPolicy || pr.kind == KindMutatingPolicy {
				n, err := r.deleteParams(ctx, session, &o)
				deleted += n
				if err != nil {
					errs = append(errs, err)
					continue // keep the policy: it still records the params
				}
			}
			err := r.Dynamic.Resource(pr.gvr).Delete(ctx, o.GetName(), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete %s %q: %w", pr.kind, o.GetName(), err))
				continue
			}
			deleted++
			r.Log.Info("deleted admission policy object", "kind", pr.kind, "name", o.GetName(), "session", session)
		}
	}
	return deleted, errors.Join(errs...)
}

// deleteParams deletes the params a policy recorded, when they carry the
// session's labels; one that does not is left and logged.
func (r *Registrar) deleteParams(ctx context.Context, session string, p *unstructured.Unstructured) (int, error) {
	raw := p.GetAnnotations()[AnnotationParams]
	if raw == "" {
		return 0, nil
	}
	var refs []ParamRef
	if err := json.Unmarshal([]byte(raw), &refs); err != nil {
		r.Log.Warn("unreadable param list on a policy: its params are left", "policy", p.GetName(), "annotation", AnnotationParams, "error", err)
		return 0, nil
	}
	deleted := 0
	var errs []error
	for _, ref := range refs {
		ri := r.Dynamic.Resource(ref.gvr()).Namespace(ref.Namespace)
		o, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("get param %s %s/%s: %w", ref.Resource, ref.Namespace, ref.Name, err))
			continue
		}
		if l := o.GetLabels(); l[LabelManagedBy] != ManagedByValue || l[LabelSession] != session {
			r.Log.Warn("param not deleted: it is not this session's", "resource", ref.Resource, "namespace", ref.Namespace, "name", ref.Name, "session", session)
			continue
		}
		if err := ri.Delete(ctx, ref.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete param %s %s/%s: %w", ref.Resource, ref.Namespace, ref.Name, err))
			continue
		}
		deleted++
	}
	return deleted, errors.Join(errs...)
}

// addPolicySessions adds the sessions that own admission policy objects.
func (r *Registrar) addPolicySessions(ctx context.Context, out map[string]string) error {
	served, err := r.servedPolicies()
	if err != nil {
		return err
	}
	for _, pr := range served {
		list, err := r.Dynamic.Resource(pr.gvr).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
		if r.cannotList(err, pr) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %ss managed by hookback: %w", pr.kind, err)
		}
		for _, o := range list.Items {
			if s := o.GetLabels()[LabelSession]; s != "" && out[s] == "" {
				out[s] = o.GetAnnotations()[AnnotationLease]
			}
		}
	}
	return nil
}
