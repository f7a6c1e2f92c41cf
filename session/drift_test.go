package session

import (
	"context"
	"strings"
	"testing"

	"github.com/hookback/hookback/kubeconfig"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestStartPutsBackADeletedConfiguration: once start is ready, a webhook
// configuration someone else deletes is applied again. The watch starts
// from what register applied: without the drift step, or with it before
// register, the delete stays.
func TestStartPutsBackADeletedConfiguration(t *testing.T) {
	j := &journal{}
	cs, dyn := newFakeClients(t, j)
	callsBack(t, j, cs, dyn)
	shareConfigurations(t, j, cs, dyn)
	out := &syncBuffer{}
	stop := startUntilReady(t, startConfig(t, out), &kubeconfig.Cluster{Config: localConfig(), Client: cs, Watch: cs, Dynamic: dyn}, out)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("a cancelled run returned %v, want nil", err)
		}
	}()
	waitFor(t, "the watch of the session's configurations", func() bool { return j.index("watch configurations") >= 0 })
	if j.index("watch configurations") < j.index("apply test-unit") {
		t.Fatalf("the configurations were watched before they were applied: %q", j.all())
	}
	j.add("deleted by someone else")
	if err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), "test-unit", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "test-unit applied again", func() bool {
		all := j.all()
		return count(all[j.index("deleted by someone else"):], "apply test-unit") == 1
	})
}

// shareConfigurations gives the clientset, which the drift watch reads, the
// validating configurations the dynamic client applies (the two fakes keep
// separate stores, where an apiserver has one), and journals the watch once
// it is registered, so a delete after it is seen.
func shareConfigurations(t *testing.T, j *journal, cs *fake.Clientset, dyn *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dyn.PrependReactor("patch", "validatingwebhookconfigurations", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType {
			return false, nil, nil
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(p.GetPatch()); err != nil {
			return true, nil, err
		}
		typed := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
			return true, nil, err
		}
		gvr := admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations")
		if err := cs.Tracker().Create(gvr, typed, ""); err != nil {
			if err := cs.Tracker().Update(gvr, typed, ""); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil // the dynamic client's own reactor stores it too
	})
	cs.PrependWatchReactor("validatingwebhookconfigurations", func(a k8stesting.Action) (bool, watch.Interface, error) {
		w, err := cs.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err == nil && strings.Contains(a.(k8stesting.WatchAction).GetWatchRestrictions().Labels.String(), "hookback.dev/session=unit") {
			j.add("watch configurations")
		}
		return true, w, err
	})
}
