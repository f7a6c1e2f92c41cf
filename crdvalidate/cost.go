package crdvalidate

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"text/tabwriter"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"

	"github.com/hookback/hookback/manifests"
)

// The budgets the apiserver holds a CRD's rules to when it is created.
const (
	// RuleCostBudget is the estimated cost one rule (or messageExpression)
	// may have, times the number of times it can run.
	RuleCostBudget = validation.StaticEstimatedCostLimit
	// CRDCostBudget is what all the rules of one version's schema may
	// cost together.
	CRDCostBudget = validation.StaticEstimatedCRDCostLimit
)

// RuleCost is one expression's estimated cost as the apiserver estimates
// it when the CRD is created.
type RuleCost struct {
	// Path names the expression as the apiserver's errors do
	// (spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule).
	Path string `json:"path"`
	// Expression is the rule or messageExpression.
	Expression string `json:"expression"`
	// Cost is the per-call estimate times how many times the rule can run
	// (the product of the maxItems and maxProperties above it; unbounded
	// where one is missing).
	Cost uint64 `json:"cost"`
	// Error is a compilation error.
	Error string `json:"error,omitempty"`
}

// VersionCost is the cost of one version's rules.
type VersionCost struct {
	CRD     string     `json:"crd"`
	Version string     `json:"version"`
	Rules   []RuleCost `json:"rules"`
	Total   uint64     `json:"total"`
}

// OverBudget reports whether the apiserver would refuse these rules for
// their cost.
func (v VersionCost) OverBudget() bool {
	return v.Total > CRDCostBudget || slices.ContainsFunc(v.Rules, func(r RuleCost) bool { return r.Cost > RuleCostBudget })
}

// Costs estimates the cost of every x-kubernetes-validations rule of every
// version of crd with the apiserver's compiler (cel.Compile, its cost
// estimator, the environment of new expressions) and its CELSchemaContext
// for the cardinality, as its CRD validation does; unlike Compile, it
// works on a CRD over budget, to show why.
func Costs(u *unstructured.Unstructured) ([]VersionCost, error) {
	v1crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v1crd); err != nil {
		return nil, fmt.Errorf("decode CustomResourceDefinition: %w", err)
	}
	envSet := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	var out []VersionCost
	for i, v := range v1crd.Spec.Versions {
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v.Schema, internal, nil); err != nil {
			return nil, fmt.Errorf("convert the schema of version %s: %w", v.Name, err)
		}
		vc := VersionCost{CRD: v1crd.Name, Version: v.Name}
		path := field.NewPath("spec", "versions").Index(i).Child("schema", "openAPIV3Schema")
		root := internal.OpenAPIV3Schema
		if err := walkCosts(root, validation.RootCELContext(root), path, envSet, &vc); err != nil {
			return nil, fmt.Errorf("version %s: %w", v.Name, err)
		}
		out = append(out, vc)
	}
	return out, nil
}

// walkCosts visits the schema as the CRD validation does (properties,
// additionalProperties, items), compiling the rules of each node.
func walkCosts(s *apiextensions.JSONSchemaProps, ctx *validation.CELSchemaContext, path *field.Path, envSet *environment.EnvSet, vc *VersionCost) error {
	if len(s.XValidations) > 0 {
		info, err := ctx.TypeInfo()
		if err != nil || info == nil {
			return fmt.Errorf("%s: the schema has no CEL type: %v", path, err)
		}
		results, err := cel.Compile(info.Schema, info.DeclType, celconfig.PerCallLimit, envSet, cel.NewExpressionsEnvLoader())
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		for i, cr := range results {
			rule := path.Child("x-kubernetes-validations").Index(i)
			rc := RuleCost{Path: rule.Child("rule").String(), Expression: s.XValidations[i].Rule, Cost: expressionCost(cr.MaxCost, cr.MaxCardinality, ctx)}
			if cr.Error != nil {
				rc.Error = cr.Error.Detail
			}
			vc.add(rc)
			if cr.MessageExpression != nil {
				vc.add(RuleCost{Path: rule.Child("messageExpression").String(), Expression: s.XValidations[i].MessageExpression, Cost: cr.MessageExpressionMaxCost})
			}
		}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		if err := walkCosts(s.AdditionalProperties.Schema, ctx.ChildAdditionalPropertiesContext(s.AdditionalProperties.Schema), path.Child("additionalProperties"), envSet, vc); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range s.Properties {
			if !yield(k) {
				return
			}
		}
	}) {
		p := s.Properties[name]
		if err := walkCosts(&p, ctx.ChildPropertyContext(&p, name), path.Child("properties").Key(name), envSet, vc); err != nil {
			return err
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		return walkCosts(s.Items.Schema, ctx.ChildItemsContext(s.Items.Schema), path.Child("items"), envSet, vc)
	}
	return nil
}

func (vc *VersionCost) add(rc RuleCost) {
	vc.Rules = append(vc.Rules, rc)
	if math.MaxUint64-vc.Total < rc.Cost {
		vc.Total = math.MaxUint64
		return
	}
	vc.Total += rc.Cost
}

// expressionCost is the apiserver's getExpressionCost (unexported in
// k8s.io/apiextensions-apiserver pkg/apis/apiextensions/validation): the
// per-call cost times the schema's cardinality where it is bounded, else
// the rule's own.
func expressionCost(maxCost, maxCardinality uint64, ctx *validation.CELSchemaContext) uint64 {
	if ctx.MaxCardinality != nil {
		maxCardinality = *ctx.MaxCardinality
	}
	if maxCost == 0 {
		return 0
	}
	if math.MaxUint64/maxCost < maxCardinality {
		return math.MaxUint64
	}
	return maxCost * maxCardinality
}

// ReadCosts reads the CRDs in paths (see manifests.Load; other objects
// are skipped) and estimates their rules' costs.
func ReadCosts(paths []string, stdin io.Reader) ([]VersionCost, error) {
	docs, err := manifests.Load(paths, stdin)
	if err != nil {
		return nil, fmt.Errorf("read CRDs: %w", err)
	}
	var out []VersionCost
	for _, d := range docs {
		if !isCRD(d.Object) {
			continue
		}
		c, err := Costs(d.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", d.Location(), err)
		}
		out = append(out, c...)
	}
	if len(out) == 0 {
		return nil, errors.New("no CustomResourceDefinition with a schema in the CRDs given")
	}
	return out, nil
}

// CostReport is the rules' costs of CRD versions, as validate --crd-cost
// prints them.
type CostReport []VersionCost

// WriteText prints them as WriteCosts does.
func (c CostReport) WriteText(w io.Writer) error { return WriteCosts(w, c) }

// WriteCosts writes a table per version: each rule's cost and its share
// of the per-rule budget, then the total and its share of the CRD's.
func WriteCosts(w io.Writer, costs []VersionCost) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, vc := range costs {
		fmt.Fprintf(tw, "%s %s\n", vc.CRD, vc.Version)
		fmt.Fprintln(tw, "  RULE\tCOST\tOF RULE BUDGET\tEXPRESSION")
		for _, r := range vc.Rules {
			expr := r.Expression
			if r.Error != "" {
				expr += " (does not compile: " + r.Error + ")"
			}
			fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\n", r.Path, r.Cost, share(r.Cost, RuleCostBudget), expr)
		}
		fmt.Fprintf(tw, "  total\t%d\t%s of the CRD budget (%d)\t\n", vc.Total, share(vc.Total, CRDCostBudget), uint64(CRDCostBudget))
	}
	return tw.Flush()
}

func share(cost, budget uint64) string {
	switch f := float64(cost) / float64(budget); {
	case f > 100:
		return "more than 100x OVER"
	case f > 1:
		return fmt.Sprintf("%.1fx OVER", f)
	}
	return fmt.Sprintf("%.2f%%", 100*float64(cost)/float64(budget))
}
