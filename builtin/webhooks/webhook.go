// Package webhooks holds hookback's built-in admission webhooks: pod name
// policy, lifespan tolerations, sidecar injection, eviction capture and node
// CPU oversell. Each lives in its own file as a admission.Handler; Build wires the
// enabled ones with their Options and Deps.
//
// The handlers share a few rules. They never panic on bad input. Mutating
// handlers fail open: when they cannot do their job they let the object
// through unchanged and, for pods, record a Warning Event, so a broken
// webhook is visible without blocking workloads. Events are never recorded
// for dry-run requests, and object bodies are never logged.
package webhooks

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/rbac"
)

// Names of the built-in webhooks, as --webhooks selects them.
const (
	NamePodName     = "pod-name"
	NamePodLifespan = "pod-lifespan"
	NamePodSidecar  = "pod-sidecar"
	NamePodEviction = "pod-eviction"
	NameNodeStatus  = "node-status"
)

// Default paths the webhooks are served at; the configuration template
// points the apiserver at these.
const (
	PathPodName     = "/validate-pod-name"
	PathPodLifespan = "/mutate-pod-lifespan"
	PathPodSidecar  = "/mutate-pod-sidecar"
	PathPodEviction = "/validate-pod-eviction"
	PathNodeStatus  = "/mutate-node-status"
)

// Default option values.
const (
	// DefaultSidecarImage is the XXL-JOB executor sample (Spring Boot) that
	// listens on 9999, the executor port the injected container declares. It
	// is a demonstration image: real deployments pass --sidecar-image.
	DefaultSidecarImage = "xuxueli/xxl-job-executor-sample-springboot:2.4.0"
	// DefaultCPUOversellFactor doubles a node's allocatable CPU.
	DefaultCPUOversellFactor = 2.0
)

// DefaultBannedWords are the words pod-name rejects by default. Use
// DefaultOptions for a copy that is safe to modify.
var DefaultBannedWords = []string{"offensive"}

// Options configure the built-in webhooks; each comes from a flag.
type Options struct {
	// BannedWords are matched case-insensitively against pod names and
	// generateNames (--banned-words).
	BannedWords []string
	// SidecarImage is the image of the injected xxl-agent container
	// (--sidecar-image).
	SidecarImage string
	// CPUOversellFactor multiplies a node's allocatable CPU; 1 disables
	// overselling (--cpu-oversell-factor).
	CPUOversellFactor float64
}

// DefaultOptions returns the default configuration.
func DefaultOptions() Options {
	return Options{
		BannedWords:       slices.Clone(DefaultBannedWords),
		SidecarImage:      DefaultSidecarImage,
		CPUOversellFactor: DefaultCPUOversellFactor,
	}
}

// Validate reports every invalid option at once, so a user fixes all flags in
// one go. Each problem is an *OptionError.
func (o Options) Validate() error {
	var errs []error
	for i, w := range o.BannedWords {
		// An empty word is contained in every name: it would deny every pod.
		if strings.TrimSpace(w) == "" {
			errs = append(errs, &OptionError{Option: OptionBannedWords, Value: fmt.Sprintf("entry %d %q", i+1, w),
				Want: "a non-empty word (an empty one is in every pod name and would deny every pod)"})
		}
	}
	if strings.TrimSpace(o.SidecarImage) == "" {
		errs = append(errs, &OptionError{Option: OptionSidecarImage, Value: fmt.Sprintf("%q", o.SidecarImage),
			Want: "an image reference such as " + DefaultSidecarImage})
	} else if strings.ContainsAny(o.SidecarImage, " \t\r\n") {
		errs = append(errs, &OptionError{Option: OptionSidecarImage, Value: fmt.Sprintf("%q", o.SidecarImage),
			Want: "an image reference without whitespace"})
	}
	f := o.CPUOversellFactor
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 1 {
		errs = append(errs, &OptionError{Option: OptionCPUOversellFactor, Value: fmt.Sprint(f),
			Want: "a finite number >= 1 (1 disables overselling)"})
	}
	return errors.Join(errs...)
}

// Options' fields as OptionError names them.
const (
	OptionBannedWords       = "banned words"
	OptionSidecarImage      = "sidecar image"
	OptionCPUOversellFactor = "cpu oversell factor"
)

// OptionError is one invalid option. Option says which, so a caller can name
// its own spelling of it (a flag, a config field) instead of this package's.
type OptionError struct {
	Option string // one of the Option* constants
	Value  string // the offending value, quoted where it is a string
	Want   string // what would be valid
}

func (e *OptionError) Error() string { return e.Option + " " + e.Value + ": want " + e.Want }

// Deps are what the webhooks need from the running process.
type Deps struct {
	// Log receives the webhooks' own log lines; nil discards them.
	Log *slog.Logger
	// Recorder returns the events recorder whose reportingController is the
	// given webhook name. Recording is asynchronous in client-go, so a slow
	// Events API never slows admission. Needed by pod-lifespan, pod-sidecar
	// and pod-eviction.
	Recorder func(webhook string) events.EventRecorder
	// Pods is a lister from a shared informer factory the caller starts;
	// pod-eviction reads pods from it rather than a GET per request.
	Pods corev1listers.PodLister
	// PodsSynced reports whether Pods' informer has listed once; pod-eviction
	// waits for it within a request's deadline. Nil: Pods is always synced.
	PodsSynced func() bool
}

// builtin is one row of the table of built-in webhooks: everything hookback
// knows of one, so that a new built-in is its handler file, one row and its
// webhook's template (templates/NAME.yaml.tmpl, which DefaultTemplate puts
// into webhook-url.yaml.tmpl), plus its golden files and its docs, and
// nothing outside this package names it.
type builtin struct {
	name, path string
	// mutating: its webhook goes into the template's
	// MutatingWebhookConfiguration, else the validating one.
	mutating bool
	// needsEvents: the handler records Events (Deps.Recorder).
	needsEvents bool
	// needsPods: the handler reads pods from an informer (Deps.Pods).
	needsPods bool
	// options are the Options fields the handler reads (Option*), which
	// its flags set.
	options []string
	// permissions are what it needs beyond serving (Events are the
	// recorder's, declared by every part that gets one).
	permissions []rbac.Permission
	// try is what the start banner suggests to see it at work.
	try []Try
	// restore undoes what it wrote outside the session's configurations,
	// run when the last session relying on it stops.
	restore func(ctx context.Context, cs kubernetes.Interface, log *slog.Logger) error
	build   func(o Options, d Deps, log *slog.Logger, rec events.EventRecorder) admission.Handler
}

// builtins is in Names() order; Build returns webhooks in this order too.
var builtins = []builtin{
	{name: NamePodName, path: PathPodName, options: []string{OptionBannedWords},
		try: []Try{{What: "denied by pod-name", Args: "run offensive-pod --image=nginx"}},
		build: func(o Options, _ Deps, log *slog.Logger, _ events.EventRecorder) admission.Handler {
			return newPodNameHandler(o.BannedWords, log)
		}},
	{name: NamePodLifespan, mutating: true, path: PathPodLifespan, needsEvents: true, build: func(_ Options, _ Deps, log *slog.Logger, rec events.EventRecorder) admission.Handler {
		return &lifespanHandler{log: log, events: eventer{rec: rec, log: log}}
	}},
	{name: NamePodSidecar, mutating: true, path: PathPodSidecar, needsEvents: true, options: []string{OptionSidecarImage},
		try: []Try{{What: "gets the xxl-agent sidecar", MakesTryPod: true, Args: "run " + TryPod + " --image=nginx" +
			" --annotations=xxl-agent/enable=true --annotations=xxl-agent/admin-address=http://xxl-job-admin:8080" +
			" --annotations=xxl-agent/target-container=" + TryPod + " --annotations=xxl-agent/job-name=demo" +
			" && {kubectl} -n {ns} get pod " + TryPod + " -o jsonpath='{.spec.containers[*].name}{\"\\n\"}'"}},
		build: func(o Options, _ Deps, log *slog.Logger, rec events.EventRecorder) admission.Handler {
			return &sidecarHandler{image: o.SidecarImage, log: log, events: eventer{rec: rec, log: log}}
		}},
	{name: NamePodEviction, path: PathPodEviction, needsEvents: true, needsPods: true,
		permissions: []rbac.Permission{
			{Verb: "list", Resource: "pods", Why: "pod cache of pod-eviction"},
			{Verb: "watch", Resource: "pods", Why: "pod cache of pod-eviction"}},
		try: []Try{{What: "evicted, and recorded as an Event", NeedsTryPod: true,
			Raw: "echo '{\"apiVersion\":\"policy/v1\",\"kind\":\"Eviction\",\"metadata\":{\"name\":\"" + TryPod + "\"}}' | " +
				"{kubectl} create --raw /api/v1/namespaces/{ns}/pods/" + TryPod + "/eviction -f - && {kubectl} -n {ns} events --for pod/" + TryPod}},
		build: func(_ Options, d Deps, log *slog.Logger, rec events.EventRecorder) admission.Handler {
			return &evictionHandler{pods: d.Pods, synced: d.PodsSynced, log: log, rec: rec}
		}},
	{name: NameNodeStatus, mutating: true, path: PathNodeStatus, options: []string{OptionCPUOversellFactor},
		permissions: []rbac.Permission{
			{Verb: "list", Resource: "nodes", Why: "node-status restores nodes on exit"},
			{Verb: "patch", Resource: "nodes", Subresource: "status", Why: "node-status restores nodes on exit"}},
		restore: RestoreNodes,
		build: func(o Options, _ Deps, log *slog.Logger, _ events.EventRecorder) admission.Handler {
			return &nodeStatusHandler{factor: o.CPUOversellFactor, log: log}
		}},
}

// rows are the table's rows for names, in table order.
func rows(names []string) []builtin {
	var out []builtin
	for _, b := range builtins {
		if slices.Contains(names, b.name) {
			out = append(out, b)
		}
	}
	return out
}

// NeedsPods reports whether any of the named webhooks reads pods from an
// informer: whoever builds them then passes Deps.Pods.
func NeedsPods(names []string) bool {
	return slices.ContainsFunc(rows(names), func(b builtin) bool { return b.needsPods })
}

// Restores returns, by webhook name, what undoes what the named webhooks
// wrote outside the session's configurations (node-status's CPU), for the
// last session relying on them to run.
func Restores(cs kubernetes.Interface, log *slog.Logger, names []string) map[string]func(context.Context) error {
	out := map[string]func(context.Context) error{}
	for _, b := range rows(names) {
		if b.restore != nil {
			restore := b.restore
			out[b.name] = func(ctx context.Context) error { return restore(ctx, cs, log) }
		}
	}
	return out
}

// Names lists every built-in webhook name in a stable order: pod-name,
// pod-lifespan, pod-sidecar, pod-eviction, node-status.
func Names() []string {
	names := make([]string, len(builtins))
	for i, b := range builtins {
		names[i] = b.name
	}
	return names
}

// Build returns the named webhooks, in Names() order whatever order enabled
// has. The names are already resolved (no "all" or "none": see
// session.Select); an empty list builds none, duplicates collapse, and an
// unknown name is an error listing the valid ones.
func Build(enabled []string, opts Options, deps Deps) ([]admission.Webhook, error) {
	want, err := selectWebhooks(enabled)
	if err != nil {
		return nil, err
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("webhook options: %w", err)
	}
	baseLog := deps.Log
	if baseLog == nil {
		baseLog = slog.New(slog.DiscardHandler)
	}
	var hooks []admission.Webhook
	for _, b := range builtins {
		if !want[b.name] {
			continue
		}
		var rec events.EventRecorder
		if b.needsEvents {
			if deps.Recorder == nil {
				return nil, fmt.Errorf("webhook %s records events but no events recorder was provided", b.name)
			}
			if rec = deps.Recorder(b.name); rec == nil {
				return nil, fmt.Errorf("webhook %s: the events recorder factory returned nil", b.name)
			}
		}
		if b.needsPods && deps.Pods == nil {
			return nil, fmt.Errorf("webhook %s reads pods from an informer cache but no pod lister was provided", b.name)
		}
		log := baseLog.With("webhook", b.name)
		hooks = append(hooks, admission.Webhook{Name: b.name, Path: b.path, Handler: b.build(opts, deps, log, rec)})
	}
	return hooks, nil
}

// selectWebhooks turns resolved names into a set, refusing unknown ones.
func selectWebhooks(enabled []string) (map[string]bool, error) {
	valid := Names()
	want := make(map[string]bool, len(valid))
	for _, name := range enabled {
		if !slices.Contains(valid, name) {
			return nil, fmt.Errorf("unknown webhook %q: valid webhooks are %s", name, strings.Join(valid, ", "))
		}
		want[name] = true
	}
	return want, nil
}
