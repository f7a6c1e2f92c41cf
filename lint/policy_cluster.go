package lint

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// readPolicies adds the cluster's admission policies and their bindings:
// ValidatingAdmissionPolicy at admissionregistration.k8s.io/v1,
// MutatingAdmissionPolicy at v1 (1.36) or else v1beta1 (1.34, 1.35, where
// it is behind a feature gate). A kind the apiserver does not serve has
// nothing to lint.
func readPolicies(ctx context.Context, cs kubernetes.Interface, add func(string, string, ...any) error) error {
	reg := cs.AdmissionregistrationV1()
	const v1 = "admissionregistration.k8s.io/v1"
	vap, err := reg.ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("list validating admission policies: %w", err)
	}
	vapb, err := reg.ValidatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("list validating admission policy bindings: %w", err)
	}
	var objs []any
	for i := range vap.Items {
		objs = append(objs, &vap.Items[i])
	}
	if err := add(v1, kindVAP, objs...); err != nil {
		return err
	}
	objs = nil
	for i := range vapb.Items {
		objs = append(objs, &vapb.Items[i])
	}
	if err := add(v1, kindVAPB, objs...); err != nil {
		return err
	}
	return readMutatingPolicies(ctx, cs, add)
}

func readMutatingPolicies(ctx context.Context, cs kubernetes.Interface, add func(string, string, ...any) error) error {
	var pols, binds []any
	version := "admissionregistration.k8s.io/v1"
	p, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
	if err == nil {
		b, err := cs.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list mutating admission policy bindings: %w", err)
		}
		for i := range p.Items {
			pols = append(pols, &p.Items[i])
		}
		for i := range b.Items {
			binds = append(binds, &b.Items[i])
		}
	} else {
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("list mutating admission policies: %w", err)
		}
		version = "admissionregistration.k8s.io/v1beta1"
		p, err := cs.AdmissionregistrationV1beta1().MutatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("list mutating admission policies (v1beta1): %w", err)
		}
		b, err := cs.AdmissionregistrationV1beta1().MutatingAdmissionPolicyBindings().List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("list mutating admission policy bindings (v1beta1): %w", err)
		}
		for i := range p.Items {
			pols = append(pols, &p.Items[i])
		}
		for i := range b.Items {
			binds = append(binds, &b.Items[i])
		}
	}
	if err := add(version, kindMAP, pols...); err != nil {
		return err
	}
	return add(version, kindMAPB, binds...)
}
