package inspector

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Tap returns a recorder that records through rec and also notes each Event
// in the store, for the page of the review the webhook was deciding.
func (s *Store) Tap(webhook string, rec events.EventRecorder) events.EventRecorder {
	return tap{rec: rec, webhook: webhook, store: s}
}

type tap struct {
	rec     events.EventRecorder
	webhook string
	store   *Store
}

var _ events.EventRecorder = tap{}

func (t tap) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	t.rec.Eventf(regarding, related, eventtype, reason, action, note, args...)
	t.store.AddEvent(t.webhook, Event{Time: time.Now(), Type: eventtype, Reason: reason, Action: action,
		Note: fmt.Sprintf(note, args...), Regarding: describe(regarding)})
}

// describe names an Event's object: Kind namespace/name.
func describe(o runtime.Object) string {
	if ref, ok := o.(*corev1.ObjectReference); ok {
		return refString(ref.Kind, ref.Namespace, ref.Name)
	}
	if o == nil {
		return ""
	}
	acc, err := meta.Accessor(o)
	if err != nil {
		return fmt.Sprintf("%T", o)
	}
	return refString(o.GetObjectKind().GroupVersionKind().Kind, acc.GetNamespace(), acc.GetName())
}

func refString(kind, ns, name string) string {
	if ns != "" {
		name = ns + "/" + name
	}
	if kind == "" {
		return name
	}
	return kind + " " + name
}
