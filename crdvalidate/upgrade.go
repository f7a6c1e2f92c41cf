package crdvalidate

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Upgrade classes: what a stored object faces under a new CRD.
const (
	// UpgradeValid: the object passes the new rules as if created now.
	UpgradeValid = "valid"
	// UpgradeFailsWhenChanged: it breaks the new rules, but ratcheting
	// lets updates through until they change a failing field.
	UpgradeFailsWhenChanged = "fails only when the failing field is changed"
	// UpgradeFailsAnyUpdate: even an update that changes nothing is
	// refused, so no label, annotation or finalizer can be changed either
	// (a finalizer that cannot be removed blocks deletion).
	UpgradeFailsAnyUpdate = "fails on any update"
)

// UpgradeVerdict is a stored object's class under a new CRD, with the
// errors that put it there (the update's, else the create's).
type UpgradeVerdict struct {
	Class  string
	Errors []string
	// Message is the apiserver's message for those errors.
	Message string
}

// Upgrade judges stored, an object as the apiserver stores it, against c
// (the new CRD): an update that changes nothing, then, when that passes,
// the object as a create, which no ratcheting softens.
func (c *CRD) Upgrade(ctx context.Context, stored *unstructured.Unstructured) (UpgradeVerdict, error) {
	upd, err := c.Judge(ctx, Request{Object: stored, Old: stored, FieldValidation: FieldValidationWarn})
	if err != nil {
		return UpgradeVerdict{}, err
	}
	if !upd.Allowed {
		return UpgradeVerdict{Class: UpgradeFailsAnyUpdate, Errors: upd.Errors, Message: upd.Message}, nil
	}
	fresh := stored.DeepCopy()
	for _, f := range []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"} {
		unstructured.RemoveNestedField(fresh.Object, "metadata", f)
	}
	create, err := c.Judge(ctx, Request{Object: fresh, FieldValidation: FieldValidationWarn})
	if err != nil {
		return UpgradeVerdict{}, err
	}
	if !create.Allowed {
		return UpgradeVerdict{Class: UpgradeFailsWhenChanged, Errors: create.Errors, Message: create.Message}, nil
	}
	return UpgradeVerdict{Class: UpgradeValid}, nil
}
