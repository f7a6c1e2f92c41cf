package session

import (
	"fmt"
	"log/slog"
	"net/http"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/internal/admissionhttp"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/record"
	"github.com/hookback/hookback/registration"
)

// newInspectorStore is the store the inspector reads, or nil when it is
// disabled.
func newInspectorStore(ic plan.InspectorConfig, log *slog.Logger) *inspector.Store {
	if ic.Address == "" {
		return nil
	}
	return inspector.NewStore(inspector.StoreOptions{Keep: ic.Keep, Log: log})
}

// newInspector binds the inspector's page over store. Replay goes to the
// same handlers as the cluster's calls (upstream forwarders, your own
// alone under --shadow; extra
// webhooks), except the built-ins: they are built again with an events
// recorder that drops Events, so a replay leaves no trace in the cluster.
func (y *yours) newInspector(hooks []admission.Webhook, factory informers.SharedInformerFactory) (*inspector.Server, error) {
	if y.store == nil {
		return nil, nil
	}
	log, ic := y.log, y.inspector
	replayHooks, err := replayWebhooks(y.builtins, y.builtinOpts, log, hooks, factory)
	if err != nil {
		return nil, err
	}
	unshadowed(replayHooks)
	sources := map[string]string{}
	for _, h := range hooks {
		if h.Path != registration.CanaryPath {
			sources[h.Name] = inspector.SourceBuiltIn
		}
	}
	for _, h := range y.user.hooks {
		sources[h.Name] = inspector.SourceUpstream
	}
	opts := inspector.Options{Address: ic.Address, Expose: ic.Expose, Store: y.store,
		Sources: sources, Log: log, Replay: y.conversions.replayTarget(replayTarget(replayHooks, log), sources, log)}
	if y.user.fault != nil && len(y.user.hooks) > 0 {
		opts.Fault = y.user.fault
	}
	srv, err := inspector.New(opts)
	if err != nil && ic.Fallback {
		log.Warn("the inspector's default address is busy (another hookback?): serving it on a free port", "address", opts.Address, "error", err)
		opts.Address = "127.0.0.1:0"
		srv, err = inspector.New(opts)
	}
	return srv, err
}

// replayWebhooks are the handlers a replay goes to, by path.
func replayWebhooks(names []string, opts webhooks.Options, log *slog.Logger, hooks []admission.Webhook, factory informers.SharedInformerFactory) (map[string]admission.Webhook, error) {
	deps := webhooks.Deps{Log: log, Recorder: func(string) events.EventRecorder { return &events.FakeRecorder{} }}
	if webhooks.NeedsPods(names) {
		deps.Pods = factory.Core().V1().Pods().Lister()
	}
	builtins, err := webhooks.Build(names, opts, deps)
	if err != nil {
		return nil, fmt.Errorf("build the built-ins for replay: %w", err)
	}
	out := map[string]admission.Webhook{}
	for _, h := range hooks {
		out[h.Path] = h
	}
	for _, h := range builtins {
		out[h.Path] = h
	}
	delete(out, registration.CanaryPath)
	return out, nil
}

// replayTarget serves a replayed review through hookback's transport, as
// `hookback replay` does, recording nothing.
func replayTarget(hooks map[string]admission.Webhook, log *slog.Logger) record.Target {
	return func(e record.Entry) (http.Handler, error) {
		h, ok := hooks[e.Path]
		if !ok {
			return nil, fmt.Errorf("no webhook serves %s in this session", e.Path)
		}
		return admissionhttp.NewHandler(h, admissionhttp.Options{Log: log}), nil
	}
}
