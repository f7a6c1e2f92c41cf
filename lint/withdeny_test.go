package lint

import (
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
)

// TestWithDeny: validation-actions' fix is actions the apiserver takes:
// Deny replaces Warn (Deny and Warn together are refused), Audit stays.
func TestWithDeny(t *testing.T) {
	warn, audit := admissionregistrationv1.Warn, admissionregistrationv1.Audit
	for _, tc := range []struct {
		name string
		in   []admissionregistrationv1.ValidationAction
		want []string
	}{
		{"none", nil, []string{"Deny"}},
		{"warn", []admissionregistrationv1.ValidationAction{warn}, []string{"Deny"}},
		{"audit", []admissionregistrationv1.ValidationAction{audit}, []string{"Deny", "Audit"}},
		{"warn and audit", []admissionregistrationv1.ValidationAction{warn, audit}, []string{"Deny", "Audit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withDeny(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("withDeny(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
