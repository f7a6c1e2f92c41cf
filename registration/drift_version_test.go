package registration

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/hookback/hookback/internal/syncbuf"
)

// TestDriftComparesVersions decides by resourceVersion who wrote a
// version, where managedFields, whose times have whole seconds, cannot
// tell: a manager writing again within the second of its entry.
func TestDriftComparesVersions(t *testing.T) {
	second := metav1.NewTime(time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC))
	entry := func(manager string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, Time: &second,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:webhooks":{}}`)}}
	}
	config := func(rv string, policy admissionv1.FailurePolicyType) *admissionv1.ValidatingWebhookConfiguration {
		return &admissionv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: "hookback-validating-dev", ResourceVersion: rv,
				ManagedFields: []metav1.ManagedFieldsEntry{entry(FieldManager), entry("argocd-controller")}},
			Webhooks: []admissionv1.ValidatingWebhook{{Name: "pod-name.hookback.dev", FailurePolicy: &policy}},
		}
	}
	tests := []struct {
		name string
		// wrote is the version hookback's own write returned; "": none.
		wrote       string
		old, new    *admissionv1.ValidatingWebhookConfiguration
		wantRevert  bool
		wantManager string
	}{
		{"same manager again within its second", "", config("5", admissionv1.Ignore), config("6", admissionv1.Fail), true, "manager=argocd-controller"},
		{"hookback's own write", "6", config("5", admissionv1.Fail), config("6", admissionv1.Ignore), false, ""},
		{"a resync", "", config("6", admissionv1.Ignore), config("6", admissionv1.Ignore), false, ""},
		{"a newer version than hookback's", "6", config("6", admissionv1.Ignore), config("7", admissionv1.Fail), true, "manager=argocd-controller"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &syncbuf.Buffer{}
			reapplied := 0
			d := &Drift{Session: "dev", RestoreDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(log, nil)),
				Reapply: func(context.Context, *unstructured.Unstructured) error { reapplied++; return nil }}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(config("1", admissionv1.Ignore))
			if err != nil {
				t.Fatal(err)
			}
			want := &unstructured.Unstructured{Object: m}
			want.SetKind(KindValidatingHook)
			d.Set([]*unstructured.Unstructured{want})
			if tt.wrote != "" {
				mine := want.DeepCopy()
				mine.SetResourceVersion(tt.wrote)
				if err := d.Own(func() error { d.Wrote(mine); return nil }); err != nil {
					t.Fatal(err)
				}
			}
			d.updated(context.Background(), KindValidatingHook, tt.old, tt.new)
			if got := reapplied == 1; got != tt.wantRevert {
				t.Fatalf("re-applied %d times, want revert %v; log:\n%s", reapplied, tt.wantRevert, log.String())
			}
			if tt.wantRevert && !strings.Contains(log.String(), tt.wantManager) {
				t.Errorf("log does not name %s:\n%s", tt.wantManager, log.String())
			}
		})
	}
}
