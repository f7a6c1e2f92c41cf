package registration

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	jsonpatchops "github.com/hookback/hookback/internal/jsonpatch"
)

// untouchedCRDs are CRDs beside the redirected one that hookback must never
// write: one of the manifests whose conversion is not selected, and a Helm
// chart's that is not in the manifests.
func untouchedCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	notSelected := crdObject(t, "gizmos.shop.io", liveConversion)
	notSelected.SetLabels(map[string]string{LabelManagedBy: "kustomize"})
	helm := crdObject(t, "gadgets.other.io", liveConversion)
	helm.SetLabels(map[string]string{LabelManagedBy: "Helm"})
	helm.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "other"})
	return []*unstructured.Unstructured{notSelected, helm}
}

// expiredLease is the Lease of a session killed an hour ago.
func expiredLease(session string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "hookback-" + session, Namespace: "default"},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: time.Now().Add(-time.Hour)}, LeaseDurationSeconds: ptr.To(int32(30))}}
}

// givingBack are the ways a session gives back the CRDs it redirected
// (c, as session s1, redirected crds[0]).
var givingBack = []struct {
	name string
	give func(t *testing.T, c *CRDs, crds []CRD)
}{
	{name: "at exit", give: func(t *testing.T, c *CRDs, _ []CRD) {
		if _, err := c.Restore(context.Background()); err != nil {
			t.Fatal(err)
		}
	}},
	{name: "by the next run after a crash", give: func(t *testing.T, c *CRDs, _ []CRD) {
		r := &Registrar{Client: fake.NewClientset(expiredLease(c.Session)), Dynamic: c.Dynamic, Log: slog.New(slog.DiscardHandler)}
		sessions, err := r.RestoreCRDs(context.Background(), CleanupOptions{Stale: true, Except: "next", DefaultLeaseNamespace: "default"})
		if err != nil || !reflect.DeepEqual(sessions, []string{c.Session}) {
			t.Fatalf("RestoreCRDs: %v %v", sessions, err)
		}
	}},
	{name: "by a resumed session at its exit", give: func(t *testing.T, c *CRDs, crds []CRD) {
		_, during := liveStanza(t, c, crds[0].Name)
		next := &CRDs{Dynamic: c.Dynamic, Session: c.Session, LeaseRef: c.LeaseRef, Log: slog.New(slog.DiscardHandler)}
		if _, _, err := next.Ensure(context.Background(), crds, isWidgets, Target{URL: "https://10.0.0.1:9443"}); err != nil {
			t.Fatal(err)
		}
		if _, o := liveStanza(t, c, crds[0].Name); !reflect.DeepEqual(o.GetAnnotations(), during.GetAnnotations()) {
			t.Fatalf("annotations after the resumed session's Ensure %v, want the first run's %v", o.GetAnnotations(), during.GetAnnotations())
		}
		if _, err := next.Restore(context.Background()); err != nil {
			t.Fatal(err)
		}
	}},
}

// TestCRDLabelsGivenBack: a CRD whose conversion hookback redirects carries
// hookback's labels during the session, and after it (restored at exit, by
// the next run after a crash, or by a resumed session at its exit) exactly
// the labels and annotations it had: its own managed-by (kustomize, Helm)
// put back, none when it had none. CRDs hookback does not redirect are
// never written.
func TestCRDLabelsGivenBack(t *testing.T) {
	for _, tc := range []struct {
		name        string
		labels      map[string]string
		annotations map[string]string
		// saved is hookback.dev/labels during the session ("": none).
		saved string
	}{
		{name: "no labels nor annotations"},
		{name: "labels without managed-by", labels: map[string]string{"app.kubernetes.io/name": "shop"},
			annotations: map[string]string{"controller-gen.kubebuilder.io/version": "v0.19.0"}},
		{name: "managed-by kustomize", labels: map[string]string{LabelManagedBy: "kustomize", "app.kubernetes.io/name": "shop"},
			annotations: map[string]string{"controller-gen.kubebuilder.io/version": "v0.19.0"}, saved: `{"app.kubernetes.io/managed-by":"kustomize"}`},
		{name: "managed-by Helm", labels: map[string]string{LabelManagedBy: "Helm"},
			annotations: map[string]string{"meta.helm.sh/release-name": "shop", "meta.helm.sh/release-namespace": "shop-system"},
			saved:       `{"app.kubernetes.io/managed-by":"Helm"}`},
	} {
		for _, path := range givingBack {
			t.Run(tc.name+"/"+path.name, func(t *testing.T) {
				live := crdObject(t, "widgets.shop.io", liveConversion)
				live.SetLabels(tc.labels)
				live.SetAnnotations(tc.annotations)
				untouched := untouchedCRDs(t)
				c := &CRDs{Dynamic: fakeDynamic(live, untouched[0].DeepCopy(), untouched[1].DeepCopy()), Session: "s1", LeaseRef: "default/hookback-s1",
					Log: slog.New(slog.DiscardHandler)}
				crds, err := crdsOf(t, live.DeepCopy(), untouched[0].DeepCopy())
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := c.Ensure(context.Background(), crds, isWidgets, Target{URL: "https://10.0.0.1:9443"}); err != nil {
					t.Fatal(err)
				}
				_, during := liveStanza(t, c, live.GetName())
				if l := during.GetLabels(); l[LabelManagedBy] != ManagedByValue || l[LabelSession] != "s1" {
					t.Errorf("labels during the session %v, want hookback's", l)
				}
				if got := during.GetAnnotations()[AnnotationLabels]; got != tc.saved {
					t.Errorf("%s during the session %q, want %q", AnnotationLabels, got, tc.saved)
				}
				path.give(t, c, crds)
				stanza, after := liveStanza(t, c, live.GetName())
				if stanza != liveConversion {
					t.Errorf("conversion after %s, want %s", stanza, liveConversion)
				}
				if !reflect.DeepEqual(after.GetLabels(), tc.labels) || !reflect.DeepEqual(after.GetAnnotations(), tc.annotations) {
					t.Errorf("after: labels %v annotations %v, want %v %v", after.GetLabels(), after.GetAnnotations(), tc.labels, tc.annotations)
				}
				checkUntouched(t, c, untouched)
			})
		}
	}
}

func isWidgets(name string) bool { return name == "widgets.shop.io" }

// checkUntouched: each of want is in the cluster exactly as it was.
func checkUntouched(t *testing.T, c *CRDs, want []*unstructured.Unstructured) {
	t.Helper()
	for _, w := range want {
		got, err := c.Dynamic.Resource(CRDResource).Get(context.Background(), w.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Object, w.Object) {
			t.Errorf("CRD %s hookback did not redirect was written:\n got %v\nwant %v", w.GetName(), got.Object, w.Object)
		}
	}
}

// TestCRDRestoredFromCrashMarks: a killed session's marks on the CRDs
// (registration/testdata/crd-crashed.yaml) are enough for the next run to
// give each its conversion, labels and annotations back; a CRD it never
// touched is not written.
func TestCRDRestoredFromCrashMarks(t *testing.T) {
	objs := crashedCRDs(t)
	c := &CRDs{Dynamic: fakeDynamic(objs...), Session: "next", Log: slog.New(slog.DiscardHandler)}
	helm := objs[2].(*unstructured.Unstructured).DeepCopy()
	r := &Registrar{Client: fake.NewClientset(expiredLease("dead")), Dynamic: c.Dynamic, Log: slog.New(slog.DiscardHandler)}
	sessions, err := r.RestoreCRDs(context.Background(), CleanupOptions{Stale: true, Except: "next", DefaultLeaseNamespace: "default"})
	if err != nil || !reflect.DeepEqual(sessions, []string{"dead"}) {
		t.Fatalf("RestoreCRDs: %v %v", sessions, err)
	}
	for _, tc := range []struct {
		name, conversion string
		labels, anns     map[string]string
	}{
		{name: "widgets.shop.io", conversion: liveConversion,
			labels: map[string]string{LabelManagedBy: "kustomize", "app.kubernetes.io/name": "shop"},
			anns:   map[string]string{"controller-gen.kubebuilder.io/version": "v0.19.0"}},
		{name: "gizmos.shop.io",
			conversion: `{"strategy":"Webhook","webhook":{"clientConfig":{"service":{"name":"webhook-service","namespace":"shop-system","path":"/convert","port":443}},"conversionReviewVersions":["v1"]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stanza, o := liveStanza(t, c, tc.name)
			if stanza != tc.conversion {
				t.Errorf("conversion %s, want %s", stanza, tc.conversion)
			}
			if !reflect.DeepEqual(o.GetLabels(), tc.labels) || !reflect.DeepEqual(o.GetAnnotations(), tc.anns) {
				t.Errorf("labels %v annotations %v, want %v %v", o.GetLabels(), o.GetAnnotations(), tc.labels, tc.anns)
			}
		})
	}
	checkUntouched(t, c, []*unstructured.Unstructured{helm})
}

// crashedCRDs reads registration/testdata/crd-crashed.yaml.
func crashedCRDs(t *testing.T) []runtime.Object {
	t.Helper()
	f, err := os.Open("testdata/crd-crashed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
	var out []runtime.Object
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			break
		}
		if u.Object != nil {
			out = append(out, u)
		}
	}
	if len(out) != 3 {
		t.Fatalf("testdata/crd-crashed.yaml: %d CRDs, want 3", len(out))
	}
	return out
}

// TestCRDRestoreKeepsOthersLabels: a helm upgrade or kubectl apply during
// the session puts the CRD's own managed-by back over hookback's; the
// restore still finds the CRD (by the session label), keeps their value,
// and drops hookback's marks. A hookback.dev/labels that is not JSON is an
// error that says what to do, and the CRD is left as it is.
func TestCRDRestoreKeepsOthersLabels(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(o *unstructured.Unstructured)
		labels  map[string]string
		wantErr string
	}{
		{name: "managed-by set again by helm upgrade", edit: func(o *unstructured.Unstructured) {
			l := o.GetLabels()
			l[LabelManagedBy] = "Helm"
			o.SetLabels(l)
		}, labels: map[string]string{LabelManagedBy: "Helm"}},
		{name: "saved labels not JSON", edit: func(o *unstructured.Unstructured) {
			a := o.GetAnnotations()
			a[AnnotationLabels] = "kustomize"
			o.SetAnnotations(a)
		}, wantErr: `CustomResourceDefinition "widgets.shop.io": annotation hookback.dev/labels is not a JSON object of strings`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			live := crdObject(t, "widgets.shop.io", liveConversion)
			live.SetLabels(map[string]string{LabelManagedBy: "kustomize"})
			c := &CRDs{Dynamic: fakeDynamic(live), Session: "s1", LeaseRef: "default/hookback-s1", Log: slog.New(slog.DiscardHandler)}
			crds, _ := crdsOf(t, live.DeepCopy())
			if _, _, err := c.Ensure(ctx, crds, isWidgets, Target{URL: "https://10.0.0.1:9443"}); err != nil {
				t.Fatal(err)
			}
			_, o := liveStanza(t, c, live.GetName())
			tc.edit(o)
			edited, err := c.Dynamic.Resource(CRDResource).Update(ctx, o, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Restore(ctx)
			_, after := liveStanza(t, c, live.GetName())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "put its labels back by hand") {
					t.Fatalf("Restore: %v, want %q and what to do", err, tc.wantErr)
				}
				if !reflect.DeepEqual(after.Object, edited.Object) {
					t.Errorf("the CRD was written though its marks could not be read")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(after.GetLabels(), tc.labels) || len(after.GetAnnotations()) != 0 {
				t.Errorf("labels %v annotations %v, want %v and none", after.GetLabels(), after.GetAnnotations(), tc.labels)
			}
		})
	}
}

// TestUnlabel: UnlabelOps applied to an object's labels, and Unlabel (for
// an object written whole, a Lease), give the same labels.
func TestUnlabel(t *testing.T) {
	for _, tc := range []struct {
		name          string
		labels, saved map[string]string
		want          map[string]string
	}{
		{name: "hookback's only", labels: SessionLabels("s1")},
		{name: "hookback's beside others", labels: map[string]string{LabelManagedBy: ManagedByValue, LabelSession: "s1", "a": "b"},
			want: map[string]string{"a": "b"}},
		{name: "kustomize put back", labels: map[string]string{LabelManagedBy: ManagedByValue, LabelSession: "s1", "a": "b"},
			saved: map[string]string{LabelManagedBy: "kustomize"}, want: map[string]string{LabelManagedBy: "kustomize", "a": "b"}},
		{name: "someone else's managed-by stays", labels: map[string]string{LabelManagedBy: "Helm", LabelSession: "s1"},
			saved: map[string]string{LabelManagedBy: "kustomize"}, want: map[string]string{LabelManagedBy: "Helm"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Unlabel(tc.labels, tc.saved); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Unlabel = %v, want %v", got, tc.want)
			}
			doc, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": tc.labels}})
			patch, err := jsonpatch.DecodePatch(jsonpatchops.Encode(UnlabelOps(tc.labels, tc.saved)))
			if err != nil {
				t.Fatal(err)
			}
			out, err := patch.Apply(doc)
			if err != nil {
				t.Fatalf("UnlabelOps does not apply: %v", err)
			}
			var got struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(out, &got); err != nil || !reflect.DeepEqual(got.Metadata.Labels, tc.want) {
				t.Errorf("UnlabelOps gives %s, want %v", out, tc.want)
			}
		})
	}
}
