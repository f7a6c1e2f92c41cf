package chain

import (
	"encoding/json"
	"fmt"

	"github.com/hookback/hookback/internal/jsondiff"
)

// View is one request's chain told in the apiserver's order: the object
// as submitted, the changes before your webhook, your patch, the changes
// after it round by round, and the object the validators saw.
type View struct {
	Request   Identity `json:"request"`
	Kind      string   `json:"kind,omitempty"`
	Ambiguous bool     `json:"ambiguous,omitempty"`
	// Submitted is the object as the first observer saw it: as submitted,
	// after the MutatingAdmissionPolicies' first round. Empty when the
	// first observer did not see the request.
	Submitted json.RawMessage `json:"submitted,omitempty"`
	// Requested is the object as the client sent it, from the audit log
	// (AuditID names its event); empty without one.
	Requested json.RawMessage `json:"requested,omitempty"`
	AuditID   string          `json:"auditID,omitempty"`
	// Steps are the changes, stage by stage, in order.
	Steps []Step `json:"steps"`
	// Yours are your webhook's calls, one per round.
	Yours []YourCall `json:"yours"`
	// Final is the object the validators saw; empty when that view never
	// came. Validators are the validating configurations and policies that
	// match it.
	Final      json.RawMessage `json:"final,omitempty"`
	Validators []Actor         `json:"validators,omitempty"`
	Warnings   []Warning       `json:"warnings,omitempty"`
	// Exact says the attributions come from the apiserver's audit
	// annotations, not from the rules alone.
	Exact bool `json:"exact,omitempty"`
}

// Step is the changes made between two views.
type Step struct {
	// Name says where: before your webhook, after it, a reinvocation
	// round, the apiserver after mutating admission.
	Name    string       `json:"name"`
	Round   int          `json:"round"`
	Changes []Attributed `json:"changes"`
	// Candidates are who could have made changes here, in the apiserver's
	// order.
	Candidates []Actor `json:"candidates,omitempty"`
	// Missing says why the step could not be compared (a view that never
	// came).
	Missing string `json:"missing,omitempty"`
}

// Names of the steps.
const (
	StepPolicies  = "the policies' first round"
	StepBefore    = "before your webhook"
	StepYours     = "your webhook"
	StepAfter     = "after your webhook"
	StepRound     = "reinvocation round"
	StepAPIServer = "the apiserver after mutating admission"
)

// Attributed is a change with who made it: one actor where only one could
// have, else every one that could ("one of").
type Attributed struct {
	jsondiff.Change
	By []Actor `json:"by"`
	// Exact: named by the apiserver's audit annotation for this round and
	// index, not inferred from the rules; Inferred is then what the rules
	// alone said (the two agree when By is among Inferred).
	Exact    bool    `json:"exact,omitempty"`
	Inferred []Actor `json:"inferred,omitempty"`
}

// Who says By in words: one name, or "one of a, b".
func (a Attributed) Who() string {
	switch len(a.By) {
	case 0:
		return "unknown"
	case 1:
		return a.By[0].String()
	}
	s := "one of "
	for i, x := range a.By {
		if i > 0 {
			s += ", "
		}
		s += x.String()
	}
	return s
}

// Actor is one part of the chain.
type Actor struct {
	// Kind is MutatingWebhookConfiguration, MutatingAdmissionPolicy,
	// ValidatingWebhookConfiguration, ValidatingAdmissionPolicy, "your
	// webhook" or "apiserver".
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Webhook is the webhook within a configuration.
	Webhook string `json:"webhook,omitempty"`
	// Note says why it is named though it may not have been called: its
	// matchConditions could not be evaluated here.
	Note string `json:"note,omitempty"`
}

// Kinds of Actor.
const (
	KindMutatingConfiguration   = "MutatingWebhookConfiguration"
	KindMutatingPolicy          = "MutatingAdmissionPolicy"
	KindValidatingConfiguration = "ValidatingWebhookConfiguration"
	KindValidatingPolicy        = "ValidatingAdmissionPolicy"
	KindYours                   = "your webhook"
	KindAPIServer               = "apiserver"
)

func (a Actor) String() string {
	switch {
	case a.Kind == KindAPIServer:
		return "the apiserver (" + a.Name + ")"
	case a.Webhook != "" && a.Webhook != a.Name:
		return fmt.Sprintf("%s %s (webhook %s)", a.Kind, a.Name, a.Webhook)
	}
	return a.Kind + " " + a.Name
}

// YourCall is one call of your webhook.
type YourCall struct {
	Round   int    `json:"round"`
	Webhook string `json:"webhook"`
	// Configuration is the configuration that calls it and Reinvocation
	// its reinvocationPolicy, when the catalog has it.
	Configuration string `json:"configuration,omitempty"`
	Reinvocation  string `json:"reinvocationPolicy,omitempty"`
	UID           string `json:"uid"`
	Allowed       bool   `json:"allowed"`
	Message       string `json:"message,omitempty"`
	// Patch is the JSON patch it answered; Sees are the changes between
	// the submitted object and the one it saw (round 0).
	Patch json.RawMessage `json:"patch,omitempty"`
	Saw   json.RawMessage `json:"saw,omitempty"`
}

// Warning is something in the chain that works against your webhook.
type Warning struct {
	// Kind is overwritten, not-reinvoked or saw-changed.
	Kind string `json:"kind"`
	Path string `json:"path"`
	// Round is the round of your call an overwritten warning is about.
	Round   int    `json:"round"`
	Message string `json:"message"`
}

// Kinds of Warning.
const (
	// WarnOverwritten: a later change altered or removed a field your
	// patch set.
	WarnOverwritten = "overwritten"
	// WarnNotReinvoked: your webhook's reinvocationPolicy is Never while a
	// later change touched a field it reads.
	WarnNotReinvoked = "not-reinvoked"
	// WarnSawChanged: the object your webhook saw already differed from the
	// submitted one in a field it patches.
	WarnSawChanged = "saw-changed"
)
