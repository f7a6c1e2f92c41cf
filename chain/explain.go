package chain

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/hookback/hookback/internal/jsondiff"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

// Explain tells c as a View, attributing each change with cat. yours is
// what this session registered: the configuration of cat that is one of
// yours calls your webhook, and any other (another session's registered
// from the same manifests included) is a part of the chain. rec, when not
// nil, is the apiserver's audit record of the request: its webhook patch
// annotations name the webhook of each change they cover, and the object
// as the client sent it shows what the policies' first round (and
// defaulting) changed. nsLabels are the request's namespace labels, nil
// when unknown.
func Explain(c *Chain, cat Catalog, yours Registered, nsLabels map[string]string, rec *Record) (View, error) {
	if len(c.Yours) == 0 {
		return View{}, fmt.Errorf("chain: %s: your webhook saw no call of this request", c.Identity)
	}
	var exact *Exact
	if rec != nil {
		exact = rec.Exact
	}
	v := View{Request: c.Identity, Kind: c.Yours[0].Kind, Ambiguous: c.Ambiguous, Exact: exact != nil}
	e := explainer{c: c, cat: cat, exact: exact, rec: rec, req: Request{Identity: c.Identity, Namespaced: c.Identity.Namespace != "", NamespaceLabels: nsLabels}}
	e.req.Labels = e.labels()
	e.req.Views = views(c)
	e.yourConf, e.yourHook = yourConfiguration(cat, yours, c.Yours[0].Path)
	for i, y := range c.Yours {
		v.Yours = append(v.Yours, YourCall{Round: i, Webhook: y.Webhook, Configuration: e.yourConf, Reinvocation: e.yourHook.Reinvocation,
			UID: y.UID, Allowed: y.Allowed, Message: y.Message, Patch: y.Patch, Saw: y.Object})
	}
	if c.Submitted != nil {
		v.Submitted = c.Submitted.Object
	}
	if rec != nil {
		v.Requested, v.AuditID = rec.Requested, rec.AuditID
	}
	steps, err := e.steps()
	if err != nil {
		return View{}, err
	}
	v.Steps = steps
	if c.Final != nil {
		v.Final = c.Final.Object
		v.Validators = e.validators()
	}
	if v.Warnings, err = e.warnings(steps); err != nil {
		return View{}, err
	}
	return v, nil
}

type explainer struct {
	// objects are the chain's objects decoded, and patchedObjs your
	// patches applied, by where their bytes are: the steps and the
	// warnings compare the same objects, each is decoded (patched) once.
	objects     map[bytesKey]any
	patchedObjs map[[2]bytesKey][]byte
	c           *Chain
	cat         Catalog
	exact       *Exact
	rec         *Record
	req         Request
	yourConf    string
	yourHook    Webhook
}

// labels are the object's labels at every view: a selector matching any
// could have matched when its webhook was called.
func (e *explainer) labels() []map[string]string {
	var out []map[string]string
	add := func(o *Observation) {
		var m struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if o != nil && json.Unmarshal(o.Object, &m) == nil {
			out = append(out, m.Metadata.Labels)
		}
	}
	add(e.c.Submitted)
	for i := range e.c.Yours {
		add(&e.c.Yours[i])
	}
	for i := range e.c.After {
		add(&e.c.After[i])
	}
	add(e.c.Final)
	return out
}

// steps compares the views in order: submitted to what you saw, what you
// answered to the last observer's round 0, then each later round, then
// the validators' view.
func (e *explainer) steps() ([]Step, error) {
	c := e.c
	out := []Step{e.policies()}
	yours0 := c.Yours[0]
	before := Step{Name: StepBefore, Candidates: e.before()}
	if c.Submitted == nil {
		before.Missing = "the first observer did not see this request"
	} else if err := e.compare(&before, c.Submitted.Object, yours0.Object, 0); err != nil {
		return nil, err
	}
	out = append(out, before)
	last := yours0
	for round := 0; round < 2; round++ {
		if round >= len(c.After) {
			if round == 0 {
				out = append(out, Step{Name: StepAfter, Missing: "the last observer did not see this request"})
			}
			break
		}
		from, err := e.patched(last.Object, last.Patch)
		if err != nil {
			return nil, fmt.Errorf("chain: %s: your patch: %w", c.Identity, err)
		}
		if round == 1 {
			from = c.After[0].Object
		}
		st := Step{Name: StepAfter, Round: round, Candidates: e.after()}
		if round == 1 {
			st.Name, st.Candidates = StepRound, e.reinvoked()
		}
		if err := e.compare(&st, from, c.After[round].Object, round); err != nil {
			return nil, err
		}
		out = append(out, st)
		if round+1 < len(c.Yours) {
			last = c.Yours[round+1]
		}
	}
	if c.Final != nil && len(c.After) > 0 {
		st := Step{Name: StepAPIServer, Candidates: []Actor{apiserver}}
		if err := e.compare(&st, c.After[len(c.After)-1].Object, c.Final.Object, -1); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

var apiserver = Actor{Kind: KindAPIServer, Name: "defaults, the generated name and system fields"}

// defaulting is what the apiserver does to what the client sent before
// the policies: its defaults and its built-in mutating admission plugins
// (ServiceAccount's token volume, Priority, DefaultTolerationSeconds, as
// seen on the local control plane), never a label or an annotation.
var defaulting = Actor{Kind: KindAPIServer, Name: "defaults and built-in admission plugins"}

// policies is the first step: the MutatingAdmissionPolicies' first round,
// before any webhook. Only the audit log's copy of the object as the
// client sent it shows its changes, mixed with the apiserver's defaults
// (which never touch labels or annotations).
func (e *explainer) policies() Step {
	st := Step{Name: StepPolicies}
	for _, p := range e.cat.MutatingPolicies {
		if ok, note := p.Matches(e.req); ok {
			st.Candidates = append(st.Candidates, Actor{Kind: KindMutatingPolicy, Name: p.Name, Note: note})
		}
	}
	switch {
	case e.rec == nil || len(e.rec.Requested) == 0:
		st.Missing = "the object as the client sent it is known only from the apiserver's audit log (--chain-audit-log)"
		return st
	case e.c.Submitted == nil:
		st.Missing = "the first observer did not see this request"
		return st
	}
	changes, err := jsondiff.Pointers(e.rec.Requested, e.c.Submitted.Object)
	if err != nil {
		st.Missing = err.Error()
		return st
	}
	for _, ch := range changes {
		by := append(slices.Clone(st.Candidates), defaulting)
		if strings.HasPrefix(ch.Path, "/metadata/labels") || strings.HasPrefix(ch.Path, "/metadata/annotations") {
			by = st.Candidates
		}
		st.Changes = append(st.Changes, Attributed{Change: ch, By: by})
	}
	return st
}

// compare fills st with the changes from a to b, each attributed.
func (e *explainer) compare(st *Step, a, b []byte, round int) error {
	changes, err := jsondiff.PointersDecoded(e.decode, a, b)
	if err != nil {
		return err
	}
	yourPaths := map[string]bool{}
	if st.Name == StepRound && len(e.c.Yours) > 1 {
		for _, p := range patchPaths(e.c.Yours[1].Patch) {
			yourPaths[p] = true
		}
	}
	for _, ch := range changes {
		at := Attributed{Change: ch, By: st.Candidates}
		if mine(yourPaths, ch.Path) {
			at.By = []Actor{{Kind: KindYours, Name: e.c.Yours[0].Webhook}}
		} else if round >= 0 && e.exact != nil {
			if by, ok := e.exact.attribute(round, ch.Path, e.yourConf, st.Name == StepBefore); ok {
				at.By, at.Exact, at.Inferred = by, true, st.Candidates
			} else if maps := kindOnly(st.Candidates, KindMutatingPolicy); len(maps) > 0 {
				// No webhook patched it, so a policy did.
				at.By, at.Exact, at.Inferred = maps, true, st.Candidates
			}
		}
		st.Changes = append(st.Changes, at)
	}
	return nil
}

func mine(paths map[string]bool, p string) bool {
	for q := range paths {
		if jsondiff.Related(q, p) {
			return true
		}
	}
	return false
}

func kindOnly(actors []Actor, kind string) []Actor {
	var out []Actor
	for _, a := range actors {
		if a.Kind == kind {
			out = append(out, a)
		}
	}
	return out
}

// before are who could change the object between the first observer and
// your webhook: the policies' first round is before the first observer,
// so only configurations sorted before yours.
func (e *explainer) before() []Actor {
	return e.configurations(func(name string, i int) bool {
		return e.yourConf == "" || name < e.yourConf || name == e.yourConf && i < e.yourIndex()
	})
}

// after are the configurations sorted after yours.
func (e *explainer) after() []Actor {
	return e.configurations(func(name string, i int) bool {
		return e.yourConf == "" || name > e.yourConf || name == e.yourConf && i > e.yourIndex()
	})
}

// reinvoked are who can change the object in the reinvocation round:
// policies and webhooks whose reinvocationPolicy is IfNeeded.
func (e *explainer) reinvoked() []Actor {
	var out []Actor
	for _, p := range e.cat.MutatingPolicies {
		if ok, note := p.Matches(e.req); ok && p.Reinvocation == "IfNeeded" {
			out = append(out, Actor{Kind: KindMutatingPolicy, Name: p.Name, Note: note})
		}
	}
	for _, conf := range e.cat.Mutating {
		if conf.Observer != "" {
			continue
		}
		for _, w := range conf.Webhooks {
			if w.Reinvocation != "IfNeeded" || conf.Name == e.yourConf && w.Name == e.yourHook.Name {
				continue
			}
			if ok, note := w.Matches(e.req); ok {
				out = append(out, Actor{Kind: KindMutatingConfiguration, Name: conf.Name, Webhook: w.Name, Note: note})
			}
		}
	}
	return out
}

func (e *explainer) yourIndex() int {
	for _, conf := range e.cat.Mutating {
		if conf.Name == e.yourConf {
			for i, w := range conf.Webhooks {
				if w.Name == e.yourHook.Name {
					return i
				}
			}
		}
	}
	return -1
}

// configurations are the matching webhooks of the mutating
// configurations that keep says are in the step, in the apiserver's order.
func (e *explainer) configurations(keep func(conf string, i int) bool) []Actor {
	var out []Actor
	for _, conf := range e.cat.Mutating {
		if conf.Observer != "" {
			continue
		}
		for i, w := range conf.Webhooks {
			if !keep(conf.Name, i) || conf.Name == e.yourConf && w.Name == e.yourHook.Name {
				continue
			}
			if ok, note := w.Matches(e.req); ok {
				out = append(out, Actor{Kind: KindMutatingConfiguration, Name: conf.Name, Webhook: w.Name, Note: note})
			}
		}
	}
	return out
}

// validators are the validating configurations and policies that match.
func (e *explainer) validators() []Actor {
	var out []Actor
	for _, p := range e.cat.ValidatingPolicies {
		if ok, note := p.Matches(e.req); ok {
			out = append(out, Actor{Kind: KindValidatingPolicy, Name: p.Name, Note: note})
		}
	}
	for _, conf := range e.cat.Validating {
		if conf.Observer != "" {
			continue
		}
		for _, w := range conf.Webhooks {
			if ok, note := w.Matches(e.req); ok {
				out = append(out, Actor{Kind: KindValidatingConfiguration, Name: conf.Name, Webhook: w.Name, Note: note})
			}
		}
	}
	return out
}

// patched is object after patch (none: object itself).
func patched(object, patch []byte) ([]byte, error) {
	if len(patch) == 0 || len(object) == 0 {
		return object, nil
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return p.Apply(object)
}

// patchOp is one operation of a JSON patch, as far as the view reads it.
type patchOp struct {
	Op   string `json:"op"`
	Path string `json:"path"`
	From string `json:"from"`
}

// patchPaths are the paths a patch writes or removes.
func patchPaths(patch []byte) []string {
	var ops []patchOp
	if json.Unmarshal(patch, &ops) != nil {
		return nil
	}
	var out []string
	for _, op := range ops {
		if op.Op == "test" {
			continue
		}
		out = append(out, strings.TrimSuffix(op.Path, "/-"))
		if op.Op == "move" {
			out = append(out, op.From)
		}
	}
	return out
}
