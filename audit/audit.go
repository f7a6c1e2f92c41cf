// Package audit sends the objects already stored in a cluster through
// admission webhooks, as the reviews the apiserver would send for them
// (dry run), and reports what each webhook would do: which existing objects
// a change to a webhook would deny or patch. It also round-trips custom
// resources through their conversion webhooks to find the fields a
// conversion loses. It reads the cluster (paged lists, never a watch) and
// writes nothing to it.
package audit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/internal/jsondiff"
)

// Webhook is one webhook of a configuration, as registered, with the
// handler that answers its reviews (a built-in, or a forwarder to the
// developer's server).
type Webhook struct {
	// Name is the webhook's name in its configuration.
	Name     string
	Mutating bool
	Rules    []admissionregistrationv1.RuleWithOperations
	// NamespaceSelector and ObjectSelector are nil when the configuration
	// has none (everything matches).
	NamespaceSelector *metav1.LabelSelector
	ObjectSelector    *metav1.LabelSelector
	// MatchConditions counts the CEL conditions, which the audit does not
	// evaluate: it reports the webhook as if they matched.
	MatchConditions int
	// ReviewVersions are the AdmissionReview versions the webhook accepts,
	// in its order of preference.
	ReviewVersions []string
	Timeout        time.Duration
	Handler        admission.Handler
	// Policy marks an admission policy audited like a webhook (its rules
	// are the policy's matchConstraints' resourceRules; the handler
	// matches the rest): Compare pairs each policy with each webhook. Its
	// handler runs in process and never reads Request.Review, so the
	// review is built without encoding it.
	Policy bool
}

// Lister reads what the audit needs from the cluster.
//
// Contract: List calls each for every object of the resource (in pages
// internally, never a watch) and stops at the first error each returns;
// Resources may return partial results with an error naming what it could
// not discover.
type Lister interface {
	Resources(ctx context.Context) ([]APIResource, error)
	List(ctx context.Context, gvr schema.GroupVersionResource, each func(obj map[string]any) error) error
}

// Options configure Run.
type Options struct {
	Webhooks []Webhook
	Lister   Lister
	// Operation, when set (CREATE or UPDATE), is sent instead of the one
	// each rule suggests, to the webhooks whose rules include it.
	Operation admissionregistrationv1.OperationType
	// UserInfo is who the reviews say made the request.
	UserInfo Identity
	// Concurrency bounds the reviews in flight; zero means 8.
	Concurrency int
	// Conversions are the CRDs whose stored objects are round-tripped
	// through their conversion webhooks; CRDs reads them from the cluster.
	Conversions []Conversion
	CRDs        CRDReader
	// Progress, when set, is told after each review or round trip, and
	// once the listing is done. It must not block for long.
	Progress func(Progress)
	Log      *slog.Logger
}

// Progress is how far an audit is.
type Progress struct {
	// Done are the reviews and round trips answered, of Queued sent to
	// the workers so far.
	Done, Queued int
	// Listing: objects are still being listed, so Queued may grow.
	Listing bool
}

// Identity is the requesting user the reviews carry.
type Identity struct {
	Username string
	Groups   []string
}

// Validate reports every problem at once, a wrong value as a field.Error.
func (o Options) Validate() error {
	var errs []error
	switch o.Operation {
	case "", admissionregistrationv1.Create, admissionregistrationv1.Update:
	default:
		errs = append(errs, field.New("audit.Options.Operation", strconv.Quote(string(o.Operation)), "want CREATE or UPDATE"))
	}
	if o.Concurrency < 0 {
		errs = append(errs, field.New("audit.Options.Concurrency", strconv.Itoa(o.Concurrency), "want 1 or more"))
	}
	if o.Lister == nil {
		errs = append(errs, errors.New("audit needs a lister"))
	}
	if len(o.Conversions) > 0 && o.CRDs == nil {
		errs = append(errs, errors.New("audit of conversions needs a CRD reader"))
	}
	for _, c := range o.Conversions {
		if c.Converter == nil {
			errs = append(errs, fmt.Errorf("conversion webhook of %s has no converter", c.CRD))
		}
	}
	for _, w := range o.Webhooks {
		if w.Handler == nil {
			errs = append(errs, fmt.Errorf("webhook %s has no handler", w.Name))
		}
	}
	return errors.Join(errs...)
}

// Outcome is what a webhook did with one object.
type Outcome string

// Outcomes.
const (
	Allowed Outcome = "allowed"
	Denied  Outcome = "denied"
	Patched Outcome = "patched"
	// Error: the webhook could not be asked or answered wrongly, or the
	// objects could not be listed; the apiserver would apply the webhook's
	// failurePolicy.
	Error Outcome = "error"
	// Kept: a conversion round trip kept every field. Lost: it lost or
	// changed some (Fields). Failed: the converter answered Failure. Lost
	// and Failed count as denials.
	Kept   Outcome = "kept"
	Lost   Outcome = "lost"
	Failed Outcome = "failed"
	// Unconvertible: the object, stored in another version, cannot be
	// converted to the version the webhook registered for (its conversion
	// webhook answered Failure), so the webhook cannot be asked about it;
	// in the cluster an update of it fails the same way. A finding, as a
	// denial is.
	Unconvertible Outcome = "unconvertible"
)

// Result is one review's outcome, or one error that concerns a webhook or
// a resource (Name empty).
type Result struct {
	Webhook   string           `json:"webhook"`
	Resource  string           `json:"resource"`
	Namespace string           `json:"namespace,omitempty"`
	Name      string           `json:"name,omitempty"`
	Operation string           `json:"operation,omitempty"`
	Result    Outcome          `json:"result"`
	Message   string           `json:"message,omitempty"`
	Patch     []PatchOperation `json:"patch,omitempty"`
	Warnings  []string         `json:"warnings,omitempty"`
	// Fields are what a lost round trip lost or changed.
	Fields []jsondiff.FieldChange `json:"fields,omitempty"`
	// Policy: the row is an admission policy's, not a webhook's.
	Policy bool `json:"policy,omitempty"`
	// object is the object sent, for Compare to apply patches to.
	object []byte
}

// PatchOperation is one JSON patch operation of a patched result.
type PatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from,omitempty"`
	Value any    `json:"value,omitempty"`
}
