package assembly

import (
	"context"
	"os"

	"github.com/hookback/hookback/rbac"
	"github.com/hookback/hookback/registration"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
)

// Events hands each webhook and controller an events.EventRecorder
// that writes through client-go's record broadcaster.
//
// Why not the events.k8s.io broadcaster: it merges every Event with the same
// type, reason, action and object into one series for minutes and ignores the
// note, so a second, different problem on the same target (a recreated pod,
// two generateName pods reporting against their Namespace) would only show the
// first message. The record broadcaster deduplicates on the message: the same
// problem again bumps the count of its Event, a different one gets its own.
type Events struct {
	broadcaster record.EventBroadcaster
	client      kubernetes.Interface
	host        string
}

// Correlation limits. Distinct messages about one object are combined only
// past maxSimilar in ten minutes, and an object gets burst Events before its
// rate limit (one per five minutes) applies: generous, so that every
// distinct problem stays visible, yet still bounded for a flapping target.
const (
	maxSimilar  = 50
	eventsBurst = 100
)

// actionAnnotation carries the Event's action from the recorder to the sink:
// the record API has no action parameter, and `kubectl events` users expect
// one (Evict, InjectSidecar, ...). It never reaches the apiserver.
const actionAnnotation = "hookback.dev/event-action"

// NewEvents records through cs until Shutdown, on ctx.
func NewEvents(ctx context.Context, cs kubernetes.Interface) *Events {
	host, _ := os.Hostname()
	b := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{
		MaxEvents: maxSimilar,
		BurstSize: eventsBurst,
	}))
	return &Events{broadcaster: b, client: cs, host: host}
}

// For returns the recorder of one component (a webhook or controller name,
// the Event's reportingController).
func (e *Events) For(component string) events.EventRecorder {
	return recordAdapter{rec: e.broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component, Host: e.host})}
}

// Start sends recorded Events to the cluster, until Shutdown.
func (e *Events) Start() {
	e.broadcaster.StartRecordingToSink(actionSink{&typedcorev1.EventSinkImpl{Interface: e.client.CoreV1().Events("")}})
}

// Shutdown stops recording; Events still queued are dropped.
func (e *Events) Shutdown() { e.broadcaster.Shutdown() }

// recordAdapter is the events.EventRecorder the webhooks and controllers
// use, over a record.EventRecorder. related is not kept: none of the
// callers set it.
type recordAdapter struct{ rec record.EventRecorder }

var _ events.EventRecorder = recordAdapter{}

func (r recordAdapter) Eventf(regarding, _ runtime.Object, eventtype, reason, action, note string, args ...any) {
	r.rec.AnnotatedEventf(regarding, map[string]string{actionAnnotation: action}, eventtype, reason, note, args...)
}

// actionSink moves actionAnnotation into the Event's action field before it
// is written. Repeats are patches of count and time only, so they need no
// rewriting.
type actionSink struct{ record.EventSink }

func (s actionSink) Create(e *corev1.Event) (*corev1.Event, error) {
	return s.EventSink.Create(withAction(e))
}
func (s actionSink) Update(e *corev1.Event) (*corev1.Event, error) {
	return s.EventSink.Update(withAction(e))
}

func withAction(e *corev1.Event) *corev1.Event {
	action, ok := e.Annotations[actionAnnotation]
	if !ok {
		return e
	}
	e = e.DeepCopy()
	delete(e.Annotations, actionAnnotation)
	if len(e.Annotations) == 0 {
		e.Annotations = nil
	}
	e.Action = action
	return e
}

// EventPermissions are what recording Events needs, for every part.
func EventPermissions() []rbac.Permission {
	return []rbac.Permission{
		{Verb: "create", Resource: "events", Why: "Events", Part: registration.PartCore},
		{Verb: "patch", Resource: "events", Why: "Events (repeats)", Part: registration.PartCore},
	}
}
