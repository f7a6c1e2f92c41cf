package registration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/hookback/hookback/internal/jsonpatch"
)

// patchOp is one JSON patch operation.
type patchOp = jsonpatch.Op

// redirect points an existing CRD's conversion at hookback, saving the
// stanza it had. A CRD this session redirected already (a restart of the
// session after a crash) keeps the stanza saved then; one that another
// session redirects is left to it.
func (c *CRDs) redirect(ctx context.Context, live *unstructured.Unstructured, crd CRD, to Target) error {
	anns := live.GetAnnotations()
	saved, has := anns[AnnotationConversion]
	if has && live.GetLabels()[LabelSession] != c.Session {
		return fmt.Errorf("CustomResourceDefinition %q: its conversion is redirected by hookback session %q already: stop that session, or run `hookback cleanup --session %s`",
			crd.Name, live.GetLabels()[LabelSession], live.GetLabels()[LabelSession])
	}
	prev, _, _ := unstructured.NestedFieldNoCopy(live.Object, "spec", "conversion")
	if !has {
		b, err := json.Marshal(prev)
		if err != nil {
			return fmt.Errorf("CustomResourceDefinition %q: encode its conversion: %w", crd.Name, err)
		}
		saved = string(b)
	}
	ops := []patchOp{
		{Op: "test", Path: "/metadata/resourceVersion", Value: live.GetResourceVersion()},
		{Op: "add", Path: "/spec/conversion", Value: redirectedConversion(prev, crd.Conversion.Path, to)},
	}
	marks := map[string]string{AnnotationConversion: saved, AnnotationLease: c.LeaseRef}
	// The CRD's own managed-by (kustomize, Helm) is put back at restore; a
	// resumed session keeps what the first one saved.
	if _, kept := anns[AnnotationLabels]; !kept {
		if l := EncodeLabels(ReplacedLabels(live.GetLabels(), nil)); l != "" {
			marks[AnnotationLabels] = l
		}
	}
	ops = append(ops, jsonpatch.MapOps("/metadata/annotations", anns != nil, marks)...)
	ops = append(ops, jsonpatch.MapOps("/metadata/labels", live.GetLabels() != nil, SessionLabels(c.Session))...)
	if err := c.patch(ctx, crd.Name, ops); err != nil {
		return fmt.Errorf("redirect the conversion webhook of CustomResourceDefinition %q: %w", crd.Name, err)
	}
	c.Log.Info("conversion webhook redirected to hookback; its stanza is restored at exit", "crd", crd.Name)
	return nil
}

func (c *CRDs) patch(ctx context.Context, name string, ops []patchOp) error {
	b, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	_, err = c.Dynamic.Resource(CRDResource).Patch(ctx, name, types.JSONPatchType, b, metav1.PatchOptions{FieldManager: FieldManager})
	return err
}

// Restore gives every CRD this session redirected its saved conversion
// stanza back, exactly. It returns the CRDs restored.
func (c *CRDs) Restore(ctx context.Context) ([]string, error) {
	return c.restoreSession(ctx, c.Session)
}

// restoreSession restores the CRDs that session redirected, found by the
// session label alone: a kubectl apply or helm upgrade meanwhile puts the
// CRD's own managed-by back over hookback's, and leaves the session's.
func (c *CRDs) restoreSession(ctx context.Context, session string) ([]string, error) {
	list, err := c.Dynamic.Resource(CRDResource).List(ctx, metav1.ListOptions{LabelSelector: LabelSession + "=" + session})
	if err != nil {
		return nil, fmt.Errorf("list CustomResourceDefinitions of session %s: %w", session, err)
	}
	var restored []string
	var errs []error
	for i := range list.Items {
		o := &list.Items[i]
		if _, ok := o.GetAnnotations()[AnnotationConversion]; !ok {
			continue
		}
		if err := c.restoreOne(ctx, o); err != nil {
			errs = append(errs, err)
			continue
		}
		restored = append(restored, o.GetName())
	}
	return restored, errors.Join(errs...)
}

// restoreOne puts the saved stanza back and drops what hookback added (its
// labels stay on a CRD it installed). A conversion no longer pointing at
// hookback was replaced by someone else (make install): it is kept.
func (c *CRDs) restoreOne(ctx context.Context, o *unstructured.Unstructured) error {
	name := o.GetName()
	var saved any
	if err := json.Unmarshal([]byte(o.GetAnnotations()[AnnotationConversion]), &saved); err != nil {
		return fmt.Errorf("CustomResourceDefinition %q: annotation %s is not JSON: %w (put spec.conversion back by hand, then remove the annotation)", name, AnnotationConversion, err)
	}
	savedLabels, err := SavedLabels(fmt.Sprintf("CustomResourceDefinition %q", name), o.GetAnnotations(), nil)
	if err != nil {
		return err
	}
	ops := []patchOp{{Op: "test", Path: "/metadata/resourceVersion", Value: o.GetResourceVersion()}}
	// hookback's own stanza names its path, by url or (with --tunnel) by
	// the relay's Service.
	current, _, _ := unstructured.NestedString(o.Object, "spec", "conversion", "webhook", "clientConfig", "url")
	if svcPath, ok, _ := unstructured.NestedString(o.Object, "spec", "conversion", "webhook", "clientConfig", "service", "path"); ok {
		current = svcPath
	}
	switch {
	case !strings.Contains(current, ConvertPathPrefix+url.PathEscape(name)+"/"):
		c.Log.Warn("conversion webhook changed by someone else since hookback redirected it: kept as it is", "crd", name)
	case saved == nil:
		ops = append(ops, patchOp{Op: "remove", Path: "/spec/conversion"})
	default:
		ops = append(ops, patchOp{Op: "replace", Path: "/spec/conversion", Value: saved})
	}
	ops = append(ops, unmarkCRD(o.GetLabels(), o.GetAnnotations(), savedLabels)...)
	if err := c.patch(ctx, name, ops); err != nil {
		return fmt.Errorf("restore the conversion webhook of CustomResourceDefinition %q: %w", name, err)
	}
	c.Log.Info("conversion webhook restored", "crd", name)
	return nil
}

// unmarkCRD drops what redirect added: its annotations, and hookback's
// labels with those they replaced (saved) put back. A CRD hookback
// installed is its own and keeps its labels. One a take-over still lends
// (its CA injection set aside) keeps the labels, the Lease reference and
// the saved labels: the take-over gives them back after (package
// takeover).
func unmarkCRD(labels, anns, saved map[string]string) []patchOp {
	if _, lent := anns[AnnotationTakeOver]; lent {
		return jsonpatch.RemoveOps("/metadata/annotations", anns, 0, AnnotationConversion)
	}
	ops := jsonpatch.RemoveOps("/metadata/annotations", anns, 0, AnnotationConversion, AnnotationLease, AnnotationLabels)
	if _, installed := anns[AnnotationInstalled]; installed {
		return ops
	}
	return append(ops, UnlabelOps(labels, saved)...)
}

// RestoreCRDs restores the CRDs redirected by the sessions opts select
// (dead ones, after a crash): the first step of Cleanup, since a CRD left
// pointing at a dead hookback fails every read in another version. A user
// who may not list CRDs has none to restore.
func (r *Registrar) RestoreCRDs(ctx context.Context, opts CleanupOptions) ([]string, error) {
	// By the session label, as restoreSession.
	list, err := r.Dynamic.Resource(CRDResource).List(ctx, metav1.ListOptions{LabelSelector: LabelSession})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list CustomResourceDefinitions of hookback sessions: %w", err)
	}
	leases := map[string]string{}
	for _, o := range list.Items {
		if _, ok := o.GetAnnotations()[AnnotationConversion]; ok {
			leases[o.GetLabels()[LabelSession]] = o.GetAnnotations()[AnnotationLease]
		}
	}
	var sessions []string
	var errs []error
	for s, ref := range leases {
		sel, err := opts.Selects(ctx, r.Client, s, ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !sel {
			continue
		}
		c := &CRDs{Dynamic: r.Dynamic, Session: s, Log: r.Log}
		if _, err := c.restoreSession(ctx, s); err != nil {
			errs = append(errs, err)
			continue
		}
		sessions = append(sessions, s)
	}
	slices.Sort(sessions)
	return sessions, errors.Join(errs...)
}
