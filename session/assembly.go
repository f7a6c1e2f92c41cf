package session

import (
	"log/slog"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/assembly"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/inspector"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/server"
)

// yours are start's additions to the parts serve also runs: your webhooks
// and CRD conversions forwarded to your server, the canary, the inspector
// and the record directory.
type yours struct {
	// log, inspector and recordDir are where the run's reports go.
	log       *slog.Logger
	inspector plan.InspectorConfig
	recordDir string
	// builtins are the built-in webhooks served, by name, and their
	// options: replays build them again (newInspector).
	builtins    []string
	builtinOpts webhooks.Options
	user        *userWebhooks
	conversions *conversions
	// probes are served but are no part of the session (the canary): the
	// template and the Lease do not name them.
	probes []admission.Webhook
	// chain is start --chain's part; nil without.
	chain *chainRun
	// policies are start --policy's; nil without.
	policies *livePolicies
	// store is the inspector's, nil when it is off; set by Attach.
	store *inspector.Store
	// kinds are the configuration kinds of the served paths, which the
	// run learns at each render and the recordings keep.
	kinds *pathKinds
}

var _ assembly.Additions = (*yours)(nil)

// Attach gives your webhooks' late-answer and shadow reports and the chain
// the inspector's store, the record directory and the metrics; the
// built-ins' Events go through the store, which shows them with each review.
func (y *yours) Attach(m *server.Metrics) (assembly.EventTap, error) {
	y.store = newInspectorStore(y.inspector, y.log)
	out := y.sinks()
	if err := y.chain.attach(out); err != nil {
		return nil, err
	}
	if err := y.chain.register(m); err != nil {
		return nil, err
	}
	if err := y.policies.attach(out, m.Registry); err != nil {
		return nil, err
	}
	if y.user.late != nil {
		if err := y.user.late.attach(out); err != nil {
			return nil, err
		}
	}
	if y.user.shadow != nil {
		if err := y.user.shadow.attach(out); err != nil {
			return nil, err
		}
		if err := y.user.shadow.register(m.Registry); err != nil {
			return nil, err
		}
	}
	if y.store == nil {
		return nil, nil
	}
	return y.store.Tap, nil
}

// Serve adds your webhooks and the canary to the built-ins, the chain's
// observers around both, and your CRD conversions.
func (y *yours) Serve(builtins []admission.Webhook, reg prometheus.Registerer) (assembly.Serving, error) {
	hooks := slices.Concat(y.chain.wrap(y.policies.wrap(builtins)), y.chain.wrap(y.policies.wrap(y.user.hooks)), y.probes)
	rec, err := newRecorder(y.sinks())
	if err != nil {
		return assembly.Serving{}, err
	}
	handlers, err := y.conversions.handlers(y.log, rec, reg)
	if err != nil {
		return assembly.Serving{}, err
	}
	return assembly.Serving{Webhooks: hooks, Recorder: rec, Handlers: handlers}, nil
}

// sinks are where the run's reports go.
func (y *yours) sinks() sinks {
	return sinks{log: y.log, recordDir: y.recordDir, store: y.store, kinds: y.kinds}
}
