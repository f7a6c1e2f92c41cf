package registration

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/yaml"
)

// Drift watches the webhook configurations a session registered and puts
// them back when someone else edits or deletes them (a GitOps controller
// reverting the cluster, a colleague's cleanup). A version is hookback's
// own when its resourceVersion is one a write of this process returned
// (Wrote, inside Own); any other version that changes the configuration is
// someone else's, even a second write of the same manager within the
// second its managedFields entry records. A configuration
// reverted a second time in the session is not fought over: Drift says so,
// with the command that puts it back, and leaves it.
type Drift struct {
	// Client watches, without a request timeout.
	Client  kubernetes.Interface
	Session string
	// Reapply server-side-applies one desired configuration again.
	Reapply func(ctx context.Context, o *unstructured.Unstructured) error
	// RestoreDir is where a configuration no longer re-applied is written,
	// for the restore command; Kubectl is that command's kubectl.
	RestoreDir, Kubectl string
	Log                 *slog.Logger

	// writing is held while this process writes (Own): an event for a
	// version it wrote waits until Wrote has recorded that version.
	writing sync.Mutex
	mu      sync.Mutex
	desired map[string]*unstructured.Unstructured
	reverts map[string]int
	// wrote is the resourceVersion of hookback's last write, by kind/name.
	wrote   map[string]string
	stopped bool
}

// Own runs write, a write of hookback's configurations whose results are
// passed to Wrote (Registrar.Wrote), so that the versions it makes are not
// taken for someone else's. A nil Drift just writes.
func (d *Drift) Own(write func() error) error {
	if d == nil {
		return write()
	}
	d.writing.Lock()
	defer d.writing.Unlock()
	return write()
}

// Wrote records o, as the apiserver returned it from hookback's write, as
// hookback's own version.
func (d *Drift) Wrote(o *unstructured.Unstructured) {
	if d == nil || o == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wrote == nil {
		d.wrote = map[string]string{}
	}
	d.wrote[o.GetKind()+"/"+o.GetName()] = o.GetResourceVersion()
}

// ownVersion reports whether rv of key is what hookback last wrote, once
// the writes in flight have recorded theirs.
func (d *Drift) ownVersion(key, rv string) bool {
	d.writing.Lock()
	defer d.writing.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	return rv != "" && d.wrote[key] == rv
}

// Set replaces what the session means to have registered; call it before
// applying, so the prune of a configuration dropped from the template is
// not taken for someone else's delete. A nil Drift watches nothing.
func (d *Drift) Set(objs []*unstructured.Unstructured) {
	if d == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.desired = map[string]*unstructured.Unstructured{}
	if d.reverts == nil {
		d.reverts = map[string]int{}
	}
	for _, o := range objs {
		d.desired[o.GetKind()+"/"+o.GetName()] = o.DeepCopy()
	}
}

// Stop ends re-applying: the session is deregistering.
func (d *Drift) Stop() {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
}

// Run watches until ctx is done.
func (d *Drift) Run(ctx context.Context) {
	if d == nil {
		return
	}
	sel := ManagedSelector + "," + LabelSession + "=" + d.Session
	f := informers.NewSharedInformerFactoryWithOptions(d.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel }))
	v1 := f.Admissionregistration().V1()
	for kind, inf := range map[string]cache.SharedIndexInformer{
		KindMutatingHook:   v1.MutatingWebhookConfigurations().Informer(),
		KindValidatingHook: v1.ValidatingWebhookConfigurations().Informer(),
	} {
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(oldObj, newObj any) { d.updated(ctx, kind, oldObj, newObj) },
			DeleteFunc: func(obj any) { d.deleted(ctx, kind, obj) },
		})
		if err != nil {
			d.Log.Warn("not watching webhook configurations for changes by others", "error", err)
			return
		}
	}
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
}

// updated handles an edit: someone else's when its resourceVersion is not
// one hookback wrote and it changed the configuration.
func (d *Drift) updated(ctx context.Context, kind string, oldObj, newObj any) {
	om, err1 := runtime.DefaultUnstructuredConverter.ToUnstructured(oldObj)
	nm, err2 := runtime.DefaultUnstructuredConverter.ToUnstructured(newObj)
	if err1 != nil || err2 != nil {
		return
	}
	o, n := &unstructured.Unstructured{Object: om}, &unstructured.Unstructured{Object: nm}
	key := kind + "/" + n.GetName()
	rv := n.GetResourceVersion()
	if rv != "" && (rv == o.GetResourceVersion() || d.ownVersion(key, rv)) {
		return // a resync, or hookback's own write
	}
	changed := changedFields(om, nm)
	if len(changed) == 0 {
		return
	}
	managers := writers(o.GetManagedFields(), n.GetManagedFields())
	if len(managers) == 0 {
		return // hookback's field manager, from outside this process (the restore command)
	}
	d.revert(ctx, key, "changed by someone else",
		"fields", strings.Join(changed, ","), "manager", strings.Join(managers, ","))
}

// deleted handles a delete, or a removed hookback label, which takes the
// object out of the watch just as well.
func (d *Drift) deleted(ctx context.Context, kind string, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	d.revert(ctx, kind+"/"+m.GetName(), "deleted (or its hookback labels removed) by someone else")
}

// revert re-applies the desired configuration of key, unless this is its
// second revert in the session.
func (d *Drift) revert(ctx context.Context, key, what string, attrs ...any) {
	d.mu.Lock()
	want, ok := d.desired[key]
	if !ok || d.stopped || ctx.Err() != nil {
		d.mu.Unlock()
		return
	}
	d.reverts[key]++
	n := d.reverts[key]
	want = want.DeepCopy()
	d.mu.Unlock()
	attrs = append([]any{"configuration", key}, attrs...)
	switch {
	case n == 1:
		if err := d.Own(func() error { return d.Reapply(ctx, want) }); err != nil {
			d.Log.Error("webhook configuration "+what+"; re-applying it failed", append(attrs, "error", err)...)
			return
		}
		d.Log.Warn("webhook configuration "+what+"; re-applied", attrs...)
	case n == 2:
		d.Log.Warn("webhook configuration "+what+" a second time; hookback leaves it as it is now and serves what still reaches it",
			append(attrs, "restore", d.restoreCommand(want))...)
	default:
		d.Log.Info("webhook configuration "+what+" again; left as it is", attrs...)
	}
}

// restoreCommand writes want where the developer can apply it under
// hookback's field manager, and returns the command that does.
func (d *Drift) restoreCommand(want *unstructured.Unstructured) string {
	clean := want.DeepCopy()
	unstructured.RemoveNestedField(clean.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(clean.Object, "metadata", "resourceVersion")
	b, err := yaml.Marshal(clean.Object)
	path := filepath.Join(d.RestoreDir, strings.ToLower(want.GetKind())+"-"+want.GetName()+".yaml")
	if err == nil {
		err = os.MkdirAll(d.RestoreDir, 0o700)
	}
	if err == nil {
		err = os.WriteFile(path, b, 0o600)
	}
	if err != nil {
		return fmt.Sprintf("restart hookback (could not write %s: %v)", path, err)
	}
	k := d.Kubectl
	if k == "" {
		k = "kubectl"
	}
	return k + " apply --server-side --force-conflicts --field-manager=" + FieldManager + " -f " + path
}

// writers name who wrote now, a version hookback's process did not write:
// the foreign managers whose entry is new or later (foreignManagers); when
// none is, a manager wrote again within the second its entry records, and
// the foreign managers of the newest entry are named. None: hookback's own
// field manager wrote (its entry changed), from outside this process.
func writers(before, now []metav1.ManagedFieldsEntry) []string {
	if m := foreignManagers(before, now); len(m) > 0 {
		return m
	}
	own := func(es []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
		return slices.DeleteFunc(slices.Clone(es), func(e metav1.ManagedFieldsEntry) bool { return e.Manager != FieldManager })
	}
	if !reflect.DeepEqual(own(before), own(now)) {
		return nil
	}
	var newest *metav1.Time
	var out []string
	for _, e := range now {
		switch {
		case e.Manager == FieldManager || e.Time == nil:
		case newest == nil || e.Time.After(newest.Time):
			newest, out = e.Time, []string{e.Manager}
		case e.Time.Equal(newest) && !slices.Contains(out, e.Manager):
			out = append(out, e.Manager)
		}
	}
	if len(out) == 0 {
		return []string{"unknown"}
	}
	return out
}

// foreignManagers are the field managers other than hookback's whose entry
// is new in now or written later than in before. A manager whose fields
// hookback took back keeps its time.
func foreignManagers(before, now []metav1.ManagedFieldsEntry) []string {
	var out []string
	for _, e := range now {
		if e.Manager == FieldManager {
			continue
		}
		i := slices.IndexFunc(before, func(b metav1.ManagedFieldsEntry) bool {
			return b.Manager == e.Manager && b.Operation == e.Operation && b.Subresource == e.Subresource
		})
		if i < 0 || !timeEqual(before[i].Time, e.Time) || grew(before[i], e) {
			if !slices.Contains(out, e.Manager) {
				out = append(out, e.Manager)
			}
		}
	}
	return out
}

func timeEqual(a, b *metav1.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b)
}

// grew reports whether a manager's field set got larger: it wrote fields
// it did not own (within the same second as its previous write).
func grew(before, now metav1.ManagedFieldsEntry) bool {
	size := func(e metav1.ManagedFieldsEntry) int {
		if e.FieldsV1 == nil {
			return 0
		}
		return len(e.FieldsV1.Raw)
	}
	return size(now) > size(before)
}

// changedFields lists what differs between before and now: labels and
// annotations by key, webhooks by name and field, anything else by its
// top-level name. Bookkeeping metadata is left out.
func changedFields(before, now map[string]any) []string {
	var out []string
	for _, f := range []string{"labels", "annotations"} {
		b, _, _ := unstructured.NestedStringMap(before, "metadata", f)
		n, _, _ := unstructured.NestedStringMap(now, "metadata", f)
		for _, k := range diffKeys(toAny(b), toAny(n)) {
			out = append(out, "metadata."+f+"."+k)
		}
	}
	bw, nw := webhooksByName(before), webhooksByName(now)
	for _, name := range diffKeys(bw, nw) {
		bh, _ := bw[name].(map[string]any)
		nh, _ := nw[name].(map[string]any)
		if bh == nil || nh == nil {
			out = append(out, "webhooks["+name+"]")
			continue
		}
		for _, k := range diffKeys(bh, nh) {
			out = append(out, "webhooks["+name+"]."+k)
		}
	}
	return out
}

func webhooksByName(obj map[string]any) map[string]any {
	hooks, _, _ := unstructured.NestedSlice(obj, "webhooks")
	out := map[string]any{}
	for _, h := range hooks {
		if hm, ok := h.(map[string]any); ok {
			out[fmt.Sprint(hm["name"])] = hm
		}
	}
	return out
}

// diffKeys are the keys whose values differ between a and b, sorted.
func diffKeys(a, b map[string]any) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || !reflect.DeepEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
