package crdvalidate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
)

// Field validation directives (the fieldValidation request parameter):
// what the apiserver does with unknown fields.
const (
	// FieldValidationWarn returns them as warnings: the apiserver's
	// default when a request names none (client-go, controllers).
	FieldValidationWarn = metav1.FieldValidationWarn
	// FieldValidationStrict refuses the object: what kubectl sends.
	FieldValidationStrict = metav1.FieldValidationStrict
)

// Verdict is what the apiserver would answer to one request.
type Verdict struct {
	Allowed bool
	// Message is the apiserver's error message when not allowed:
	// `Widget.example.com "w" is invalid: [spec.size: ...]`.
	Message string
	// Errors are its field errors, one per cause ("spec.size: Invalid
	// value: ..."), or the message itself when it has no causes.
	Errors []string
	// Warnings are the warnings it would return (unknown fields under
	// FieldValidationWarn, finalizer names).
	Warnings []string
	// Object is the object as it would be stored (pruned, defaulted;
	// not pruned when Admitted: as validating admission sees it), when
	// allowed.
	Object *unstructured.Unstructured
	// BadRequest: the apiserver would refuse the body before judging it
	// (400: malformed metadata, unknown fields under Strict).
	BadRequest bool
}

// Request is one write to judge.
type Request struct {
	// Object is the request body.
	Object *unstructured.Unstructured
	// Old is the stored object an update replaces; nil for a create.
	Old *unstructured.Unstructured
	// Subresource is "" or "status" (an update of the status only).
	Subresource string
	// Namespace is used for a namespaced object that names none, as
	// kubectl uses its context's namespace ("default" when empty).
	Namespace string
	// FieldValidation is FieldValidationWarn (when empty) or
	// FieldValidationStrict.
	FieldValidation string
	// Admitted: Object is as mutating admission left it, the request body
	// decoded already (CRD.Decode, then CRD.Default after each patch). It
	// is judged as it is: the apiserver prunes the fields a mutating
	// webhook added only on the way to storage, after validating
	// admission has seen them, and warns of none of them.
	Admitted bool
}

// ErrNoCRD is a request for a kind no given CRD defines.
var ErrNoCRD = errors.New("no CRD given for this kind")

// Judge answers req as the apiserver would with crd installed. Its error
// is for input the apiserver would not even route (a kind or version the
// CRD does not serve, a status update without a status subresource).
func (c *CRD) Judge(ctx context.Context, req Request) (Verdict, error) {
	obj := req.Object.DeepCopy()
	gvk := obj.GroupVersionKind()
	ver, ok := c.versions[gvk.Version]
	if gvk.GroupKind() != c.GroupKind() || !ok || !ver.served {
		return Verdict{}, fmt.Errorf("%s is not a version that CRD %s serves", gvk.GroupVersion(), c.Name)
	}
	if req.Subresource != "" && req.Subresource != "status" {
		return Verdict{}, fmt.Errorf("subresource %q: want status (scale is not judged)", req.Subresource)
	}
	if req.Subresource == "status" && ver.status == nil {
		return Verdict{}, fmt.Errorf("CRD %s version %s has no status subresource", c.Name, gvk.Version)
	}
	if req.Subresource != "" && req.Old == nil {
		return Verdict{}, errors.New("a status update needs the stored object it updates")
	}
	rec := &recorder{}
	if !req.Admitted {
		unknown, err := c.decode(obj, coercion{})
		if err != nil {
			return c.denied(apierrors.NewBadRequest(err.Error()), rec), nil
		}
		if err := c.unknownFields(gvk, unknown, req.FieldValidation, rec); err != nil {
			return c.denied(err, rec), nil
		}
	}
	ns := c.requestNamespace(obj, req.Namespace)
	ctx = warning.WithWarningRecorder(genericapirequest.WithNamespace(ctx, ns), rec)
	restore := c.asCore(obj)
	if err := restore(c.write(ctx, ver, req, obj)); err != nil {
		return c.denied(err, rec), nil
	}
	return Verdict{Allowed: true, Warnings: rec.list, Object: obj}, nil
}

// unknownFields does what the request handlers do with the decoder's
// unknown fields: warnings, or a BadRequest under Strict.
func (c *CRD) unknownFields(gvk schema.GroupVersionKind, unknown []string, directive string, rec *recorder) error {
	if len(unknown) == 0 {
		return nil
	}
	if directive == FieldValidationStrict {
		msgs := make([]string, len(unknown))
		for i, p := range unknown {
			msgs[i] = fmt.Sprintf("unknown field %q", p)
		}
		// The handlers' transformDecodeError around the decoder's strict
		// decoding error.
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: strict decoding error: %s",
			gvk.Kind, gvk.Version, gvk.Kind, strings.Join(msgs, ", ")))
	}
	for _, p := range unknown {
		rec.AddWarning("", fmt.Sprintf("unknown field %q", p))
	}
	return nil
}

func (c *CRD) requestNamespace(obj *unstructured.Unstructured, fallback string) string {
	if !c.NamespaceScoped() {
		return metav1.NamespaceNone
	}
	if ns := obj.GetNamespace(); ns != "" {
		return ns
	}
	if fallback == "" {
		return metav1.NamespaceDefault
	}
	return fallback
}

// write is the store's create or update of obj up to the write.
func (c *CRD) write(ctx context.Context, ver *version, req Request, obj *unstructured.Unstructured) error {
	if req.Old == nil {
		return c.create(ctx, ver.main, obj)
	}
	return c.update(ctx, ver, req, obj)
}

// create is the generic registry store's create up to the write: system
// fields, a generated name, then rest.BeforeCreate with the strategy.
func (c *CRD) create(ctx context.Context, s strategy, obj *unstructured.Unstructured) error {
	rest.FillObjectMetaSystemFields(obj)
	if obj.GetGenerateName() != "" && obj.GetName() == "" {
		obj.SetName(s.GenerateName(obj.GetGenerateName()))
	}
	return rest.BeforeCreate(s, ctx, obj)
}

// update is the store's update of a stored object: old as read from
// storage (coerced and defaulted), then rest.BeforeUpdate with the main
// or the status strategy.
func (c *CRD) update(ctx context.Context, ver *version, req Request, obj *unstructured.Unstructured) error {
	old := req.Old.DeepCopy()
	if _, err := c.decode(old, coercion{fromStorage: true}); err != nil {
		return fmt.Errorf("the old object: %w", err)
	}
	if old.GetUID() == "" {
		rest.FillObjectMetaSystemFields(old)
	}
	if old.GetNamespace() == "" && c.NamespaceScoped() {
		old.SetNamespace(c.requestNamespace(obj, req.Namespace))
	}
	// A stored object has a resourceVersion, and an update must carry the
	// one it replaces (else the store refuses it, or answers Conflict):
	// the judgement is of the content, so the versions agree.
	if old.GetResourceVersion() == "" {
		old.SetResourceVersion("1")
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	var s rest.RESTUpdateStrategy = ver.main
	if req.Subresource == "status" {
		s = ver.status
	}
	return rest.BeforeUpdate(s, ctx, obj, old)
}

// denied turns the apiserver's error into a Verdict.
func (c *CRD) denied(err error, rec *recorder) Verdict {
	v := Verdict{Message: err.Error(), Warnings: rec.list, BadRequest: apierrors.IsBadRequest(err)}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, cause := range status.Status().Details.Causes {
			if cause.Field == "" {
				v.Errors = append(v.Errors, cause.Message)
				continue
			}
			v.Errors = append(v.Errors, cause.Field+": "+cause.Message)
		}
	}
	if len(v.Errors) == 0 {
		v.Errors = []string{v.Message}
	}
	return v
}

// recorder collects the warnings the apiserver would send.
type recorder struct{ list []string }

func (r *recorder) AddWarning(_, text string) { r.list = append(r.list, text) }

// withWarnings is ctx with a new recorder.
func withWarnings(ctx context.Context) (context.Context, *recorder) {
	r := &recorder{}
	return warning.WithWarningRecorder(ctx, r), r
}
