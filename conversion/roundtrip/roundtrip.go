// Package roundtrip is the conversion fuzzer of `hookback test
// --conversion-fuzz`: from a CRD's structural schemas and the objects it
// is given (suite cases, a project's samples, objects in a cluster) it
// makes objects of every served version, varied within the schema and
// reproducible from a seed, asks a validating webhook (when given) whether
// it admits each, round-trips each admitted object through the CRD's
// conversion webhook to every other served version and back, and reports
// each field lost or changed with the version pair and the path, with a
// minimal object that reproduces it. Objects are compared as the apiserver
// stores them, so that the empty structures a Go-typed conversion writes
// for absent fields are told apart from the values it loses. Teams write these round-trip tests by
// hand in Go for one API; this does it for a conversion webhook in any
// language, through the ConversionReviews the apiserver would send.
package roundtrip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"

	"github.com/hookback/hookback/conversion"
	fielderr "github.com/hookback/hookback/field" // aliased: this package has a type named field
	"github.com/hookback/hookback/internal/jsondiff"
)

// Admitter asks a validating webhook whether it admits obj, a CREATE of
// it in version (the CRD's group). A denied object is counted and not
// round-tripped: the cluster would never hold it.
//
// Contract: safe for concurrent use; allowed false with the webhook's
// message for a denial; an error only when the webhook could not be asked
// or answered wrongly, which stops the run.
type Admitter func(ctx context.Context, version string, obj map[string]any) (allowed bool, message string, err error)

// Options configure Run.
type Options struct {
	// CRD is the CustomResourceDefinition: its served versions and their
	// schemas. Every served version needs a schema.
	CRD *apiextensionsv1.CustomResourceDefinition
	// Converter answers the ConversionReviews: the conversion webhook,
	// through upstream.NewConverter's forwarding and answer checks.
	Converter conversion.Converter
	// ReviewVersion is the ConversionReview apiVersion sent; empty means
	// the first of the CRD's conversionReviewVersions hookback speaks.
	ReviewVersion string
	// N is the number of objects made per served version.
	N int
	// Seed makes the run reproducible: the same seed, CRD and seed objects
	// make the same objects.
	Seed uint64
	// Seeds are objects to start from, in any served version of the CRD
	// (others are ignored); the objects made are variations of them. With
	// none, objects are made from the schema alone.
	Seeds []map[string]any
	// Namespace is given to the objects of a namespaced CRD that have
	// none; empty means "default".
	Namespace string
	// Admit, when set, is asked about each object before its round trips.
	Admit Admitter
	// Concurrency bounds the objects in flight; zero means 4.
	Concurrency int
	// MaxShrink bounds the round trips spent making each loss's case
	// minimal; zero means 64.
	MaxShrink int
	// Strict compares every byte of the answer: a round trip's object is
	// compared as the webhook answered it, not as the apiserver would store
	// it (the fields the schema does not declare pruned, nulls dropped), and
	// an absent field that came back as an empty structure is a loss, one
	// per level, not Report.Emptied.
	Strict bool
	Log    *slog.Logger
}

// Validate reports every problem at once.
func (o Options) Validate() error {
	var errs []error
	if o.CRD == nil {
		errs = append(errs, fielderr.Advise("roundtrip.Options.CRD", "roundtrip: no CustomResourceDefinition: give one ({roundtrip.Options.CRD})"))
	}
	if o.Converter == nil {
		errs = append(errs, errors.New("roundtrip: no converter: the conversion webhook to round-trip through"))
	}
	if o.N < 1 {
		errs = append(errs, fmt.Errorf("roundtrip: %d objects per version: want 1 or more", o.N))
	}
	if o.Concurrency < 0 || o.MaxShrink < 0 {
		errs = append(errs, errors.New("roundtrip: concurrency and shrink bounds cannot be negative"))
	}
	switch o.ReviewVersion {
	case "", conversion.V1, conversion.V1beta1:
	default:
		errs = append(errs, fmt.Errorf("roundtrip: review version %q: want %s or %s", o.ReviewVersion, conversion.V1, conversion.V1beta1))
	}
	return errors.Join(errs...)
}

// Report is what a run found.
type Report struct {
	CRD  string `json:"crd"`
	Seed uint64 `json:"seed"`
	// Versions are the served versions, the storage version first.
	Versions []string `json:"versions"`
	// Objects were made; Denied of them the validating webhook denied.
	Objects int `json:"objects"`
	Denied  int `json:"denied"`
	// RoundTrips were attempted; Kept lost no set value (an absent field
	// may have come back empty, Emptied).
	RoundTrips int `json:"roundTrips"`
	Kept       int `json:"kept"`
	// Strict says every byte of the answers was compared (Options.Strict).
	Strict bool `json:"strict,omitempty"`
	// Losses are the distinct fields lost or changed, by version pair: set
	// values, compared as the apiserver stores objects unless Strict.
	Losses []Loss `json:"losses,omitempty"`
	// Emptied are the fields absent from an object that came back as empty
	// structures (objects of nothing but empty objects, lists, nulls and
	// zero values, as a Go-typed conversion writes a struct it was not
	// given), which the apiserver would store: no set value is lost. One
	// per version pair and topmost absent field; its Count includes the
	// fields below it that came back empty. None when Strict: they are
	// Losses there.
	Emptied []Loss `json:"emptied,omitempty"`
	// Failures are the distinct conversions refused or answered wrongly.
	Failures []Failure `json:"failures,omitempty"`
}

// Loss is one field a round trip From -> Via -> From lost or changed.
type Loss struct {
	From string `json:"from"`
	Via  string `json:"via"`
	// Path is the field (spec.color, metadata.labels["x"]); Before and
	// After its values in short JSON, jsondiff.Missing when absent.
	Path   string `json:"path"`
	Before string `json:"before"`
	After  string `json:"after"`
	// Count is how many round trips lost it.
	Count int `json:"count"`
	// Object is a minimal object of From that reproduces the loss (for
	// Emptied, the first object made that did, as made).
	Object map[string]any `json:"object"`
}

// Failure is a conversion From -> To that did not happen: Refused when
// the webhook answered Failure, else it answered wrongly or not at all.
type Failure struct {
	From    string         `json:"from"`
	To      string         `json:"to"`
	Refused bool           `json:"refused"`
	Message string         `json:"message"`
	Count   int            `json:"count"`
	Object  map[string]any `json:"object"`
}

// Clean says whether the run found nothing: no loss, no failure (fields
// that came back empty, Emptied, are not losses).
func (r Report) Clean() bool { return len(r.Losses) == 0 && len(r.Failures) == 0 }

// Run makes the objects, round-trips them and reports what was lost. Its
// error is for what stops the run (bad options, a schema it cannot read,
// an admission webhook that cannot be asked, ctx ending); what the
// conversion webhook does is in the Report.
func Run(ctx context.Context, opts Options) (Report, error) {
	if err := opts.Validate(); err != nil {
		return Report{}, err
	}
	r, err := newRunner(opts)
	if err != nil {
		return Report{}, err
	}
	objs, err := r.objects(ctx)
	if err != nil {
		return Report{}, err
	}
	results := make([]objectResult, len(objs))
	next := make(chan int)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	for range r.opts.Concurrency {
		wg.Go(func() {
			for i := range next {
				res, err := r.object(ctx, objs[i])
				if err != nil {
					errOnce.Do(func() { firstErr = err })
				}
				results[i] = res
			}
		})
	}
	func() {
		defer close(next)
		for i := range objs {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	wg.Wait()
	if firstErr != nil {
		return Report{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return Report{}, err
	}
	return r.report(ctx, objs, results), nil
}

// made is one object made for a version.
type made struct {
	version string
	obj     map[string]any
}

// objectResult is what happened to one object.
type objectResult struct {
	denied   bool
	trips    int
	kept     int
	losses   []tripLoss
	failures []Failure
}

// tripLoss is one round trip's lost fields and those that came back empty.
type tripLoss struct {
	via             string
	fields, emptied []jsondiff.FieldChange
}

// runner holds one run's state.
type runner struct {
	opts     Options
	crd      *apiextensionsv1.CustomResourceDefinition
	versions []version
	// stored are the versions' structural schemas, to compare objects as
	// the apiserver stores them; nil when Strict.
	stored map[string]*structuralschema.Structural
	gen    *generator
	log    *slog.Logger
}

func newRunner(opts Options) (*runner, error) {
	vs, err := served(opts.CRD)
	if err != nil {
		return nil, err
	}
	if opts.ReviewVersion == "" {
		opts.ReviewVersion = reviewVersion(opts.CRD)
	}
	if opts.Concurrency == 0 {
		opts.Concurrency = 4
	}
	if opts.MaxShrink == 0 {
		opts.MaxShrink = 64
	}
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var stored map[string]*structuralschema.Structural
	if !opts.Strict {
		stored = map[string]*structuralschema.Structural{}
		for _, v := range vs {
			if stored[v.name], err = structural(opts.CRD.Name, v); err != nil {
				return nil, err
			}
		}
	}
	return &runner{opts: opts, crd: opts.CRD, versions: vs, log: log, stored: stored,
		gen: &generator{rnd: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))}}, nil
}

// reviewVersion is the first of the CRD's conversionReviewVersions that
// hookback speaks, v1 when none is.
func reviewVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	if c := crd.Spec.Conversion; c != nil && c.Webhook != nil {
		for _, v := range c.Webhook.ConversionReviewVersions {
			if v == "v1" || v == "v1beta1" {
				return "apiextensions.k8s.io/" + v
			}
		}
	}
	return conversion.V1
}
