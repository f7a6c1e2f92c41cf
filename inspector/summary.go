package inspector

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Decisions a review can end in, as the list shows and filters them.
const (
	DecisionAllowed = "allowed"
	DecisionDenied  = "denied"
	DecisionPatched = "patched"
	DecisionErrored = "errored"
)

// decisions are the filter's choices, in order.
var decisions = []string{DecisionAllowed, DecisionDenied, DecisionPatched, DecisionErrored, DecisionConverted}

// summary is what the list shows of one review, parsed from its bytes.
type summary struct {
	UID, Operation, Kind  string
	Resource, SubResource string
	Namespace, Name       string
	User                  string
	DryRun                bool
	Decision, Message     string
	PatchOps              int
	Warnings              []string
	Patch                 []byte
	// ParseError says why the review or answer could not be read.
	ParseError string
}

// reviewDoc is what the inspector reads of an AdmissionReview request.
type reviewDoc struct {
	Request struct {
		UID         string
		Kind        struct{ Kind string }
		Resource    struct{ Resource string }
		SubResource string
		Operation   string
		Namespace   string
		Name        string
		UserInfo    struct{ Username string }
		DryRun      *bool
		Object      json.RawMessage
		OldObject   json.RawMessage
	}
}

// answerDoc is what the inspector reads of an AdmissionReview response.
type answerDoc struct {
	Response struct {
		Allowed bool
		Status  *struct {
			Code    int32
			Message string
		}
		Patch    []byte
		Warnings []string
	}
}

func summarize(e *entry) summary {
	var s summary
	review, answer := e.bodies()
	if review == nil {
		s.ParseError = "the body was not kept"
		if e.hasReview {
			s.ParseError = "the body is no longer kept: newer reviews took its place"
		} else if e.unredactable {
			s.ParseError = "the body was not kept: it could not be read to redact it"
		} else if e.tooBig {
			s.ParseError = "the body was not kept: larger than the inspector's byte bound"
		}
	} else if err := s.readReview(review); err != nil {
		s.ParseError = err.Error()
	}
	if e.failure != "" {
		s.Decision, s.Message = DecisionErrored, e.failure
		return s
	}
	if answer == nil {
		return s
	}
	if err := s.readAnswer(answer); err != nil {
		s.Decision, s.ParseError = DecisionErrored, err.Error()
	}
	return s
}

func (s *summary) readReview(b []byte) error {
	if isConversion(b) {
		return s.readConversion(b)
	}
	var rv reviewDoc
	if err := json.Unmarshal(b, &rv); err != nil {
		return fmt.Errorf("decode review: %w", err)
	}
	q := rv.Request
	s.UID, s.Operation, s.Kind = q.UID, q.Operation, q.Kind.Kind
	s.Resource, s.SubResource = q.Resource.Resource, q.SubResource
	s.Namespace, s.Name, s.User = q.Namespace, q.Name, q.UserInfo.Username
	s.DryRun = q.DryRun != nil && *q.DryRun
	if s.Name == "" && len(q.Object) > 0 {
		// A CREATE from generateName has no name yet.
		var obj struct{ Metadata struct{ GenerateName string } }
		if json.Unmarshal(q.Object, &obj) == nil && obj.Metadata.GenerateName != "" {
			s.Name = obj.Metadata.GenerateName + "*"
		}
	}
	return nil
}

func (s *summary) readAnswer(b []byte) error {
	if isConversion(b) {
		return s.readConversionAnswer(b)
	}
	var a answerDoc
	if err := json.Unmarshal(b, &a); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	r := a.Response
	s.Warnings, s.Patch = r.Warnings, r.Patch
	if r.Status != nil {
		s.Message = r.Status.Message
	}
	switch {
	case !r.Allowed && r.Status != nil && r.Status.Code >= 500:
		s.Decision = DecisionErrored
	case !r.Allowed:
		s.Decision = DecisionDenied
	case len(r.Patch) > 0:
		s.Decision = DecisionPatched
		var ops []json.RawMessage
		if err := json.Unmarshal(r.Patch, &ops); err != nil {
			return fmt.Errorf("decode patch: %w", err)
		}
		s.PatchOps = len(ops)
	default:
		s.Decision = DecisionAllowed
	}
	return nil
}

// filter selects reviews by webhook, decision and namespace; empty fields
// select all.
type filter struct {
	Webhook, Decision, Namespace string
}

func filterOf(q url.Values) filter {
	return filter{Webhook: strings.TrimSpace(q.Get("webhook")), Decision: strings.TrimSpace(q.Get("decision")),
		Namespace: strings.TrimSpace(q.Get("namespace"))}
}

func (f filter) match(e *entry) bool {
	if f.Webhook != "" && f.Webhook != e.webhook {
		return false
	}
	if f.Decision == "" && f.Namespace == "" {
		return true
	}
	s := e.summary()
	return (f.Decision == "" || f.Decision == s.Decision) && (f.Namespace == "" || f.Namespace == s.Namespace)
}

// query is the filter as a query string, for links and the stream.
func (f filter) query() string {
	q := url.Values{}
	for k, v := range map[string]string{"webhook": f.Webhook, "decision": f.Decision, "namespace": f.Namespace} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

// row is one line of the list.
type row struct {
	ID                    uint64
	Time, TimeFull        string
	Webhook, Source       string
	Operation, Resource   string
	Namespace, Name, User string
	DryRun                bool
	Decision, Detail      string
	Own, Upstream         string
	// Late says what the apiserver did instead of this answer, which
	// came after it stopped waiting.
	Late string
	// ShadowColumn: the list compares with the deployed webhook (start
	// --shadow); ShadowState (one of the Shadow* states) and Shadow say
	// how this review's answers compared.
	ShadowColumn        bool
	ShadowState, Shadow string
	// PolicyColumn: start --policy evaluates the reviews; PolicyState
	// and Policy say what the policies would do, or how they compared
	// with the webhook's answer.
	PolicyColumn        bool
	PolicyState, Policy string
}

// rowOf builds the list line of e; source says built-in or upstream.
func rowOf(e *entry, source string) row {
	s := e.summary()
	r := row{ID: e.id, Time: e.start.Local().Format("15:04:05.000"), TimeFull: e.start.Local().Format(time.RFC3339Nano),
		Webhook: e.webhook, Source: source, Operation: s.Operation, Resource: s.Resource,
		Namespace: s.Namespace, Name: s.Name, User: s.User, DryRun: s.DryRun, Decision: s.Decision, Late: e.late}
	r.ShadowState, r.Shadow, _ = e.shadowOf()
	r.ShadowColumn = r.ShadowState != ""
	r.PolicyState, r.Policy = e.policyOf()
	r.PolicyColumn = r.PolicyState != ""
	if r.Decision == "" {
		r.Decision = "unknown"
	}
	if s.SubResource != "" {
		r.Resource += "/" + s.SubResource
	}
	switch s.Decision {
	case DecisionDenied, DecisionErrored:
		r.Detail = s.Message
	case DecisionPatched:
		r.Detail = plural(s.PatchOps, "op")
	}
	r.Own = duration(e.took - e.upstream)
	if e.upstream > 0 {
		r.Upstream = duration(e.upstream)
	}
	return r
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// duration is d in a short, human unit.
func duration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return d.Round(time.Millisecond).String()
}
