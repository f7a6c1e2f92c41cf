package policy

import (
	"sort"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// expression is one CEL expression of a policy, where it sits, and what
// it may see.
type expression struct {
	path     *field.Path
	accessor plugincel.ExpressionAccessor
	opts     plugincel.OptionalVariableDeclarations
}

// CompileErrors compiles every expression of the set the way the apiserver
// checks a policy it is asked to create (environment.NewExpressions) and
// reports each error as the apiserver's validation does, as a field error
// naming the expression: `spec.validations[0].expression: Invalid value:
// "...": compilation failed: ERROR: <input>:1:8: undeclared reference ...`.
// Keys are "Kind/name", sorted by Names. Evaluation compiles as the
// plugin does (StoredExpressions) and reports the same errors at run time
// under the policy's failurePolicy.
func (s *Set) CompileErrors() map[string]field.ErrorList {
	out := map[string]field.ErrorList{}
	for _, p := range s.Validating {
		opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
		if errs := compileCheck(p.Spec.Variables, opts, validatingExpressions(p, opts)); len(errs) > 0 {
			out[KindValidating+"/"+p.Name] = errs
		}
	}
	for _, p := range s.Mutating {
		opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
		if errs := compileCheck(p.Spec.Variables, opts, mutatingExpressions(p, opts)); len(errs) > 0 {
			out[KindMutating+"/"+p.Name] = errs
		}
	}
	return out
}

// Names are the keys of a CompileErrors map, sorted.
func Names(m map[string]field.ErrorList) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func compileCheck(vars []admissionregistrationv1.Variable, opts plugincel.OptionalVariableDeclarations, exprs []expression) field.ErrorList {
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return field.ErrorList{field.InternalError(field.NewPath("spec"), err)}
	}
	var errs field.ErrorList
	for i, v := range vars {
		r := compiler.CompileAndStoreVariable(&validating.Variable{Name: v.Name, Expression: v.Expression}, opts, environment.NewExpressions)
		if r.Error != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "variables").Index(i).Child("expression"), v.Expression, r.Error.Detail))
		}
	}
	for _, e := range exprs {
		if r := compiler.CompileCELExpression(e.accessor, e.opts, environment.NewExpressions); r.Error != nil {
			errs = append(errs, field.Invalid(e.path, e.accessor.GetExpression(), r.Error.Detail))
		}
	}
	return errs
}

func matchConditionExpressions(mc []admissionregistrationv1.MatchCondition, opts plugincel.OptionalVariableDeclarations) []expression {
	var out []expression
	for i := range mc {
		out = append(out, expression{field.NewPath("spec", "matchConditions").Index(i).Child("expression"), (*matchconditions.MatchCondition)(&mc[i]), opts})
	}
	return out
}

func validatingExpressions(p *admissionregistrationv1.ValidatingAdmissionPolicy, opts plugincel.OptionalVariableDeclarations) []expression {
	out := matchConditionExpressions(p.Spec.MatchConditions, opts)
	msgOpts := opts
	msgOpts.HasAuthorizer = false
	for i, v := range p.Spec.Validations {
		path := field.NewPath("spec", "validations").Index(i)
		out = append(out, expression{path.Child("expression"), &validating.ValidationCondition{Expression: v.Expression}, opts})
		if v.MessageExpression != "" {
			out = append(out, expression{path.Child("messageExpression"), &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}, msgOpts})
		}
	}
	for i, a := range p.Spec.AuditAnnotations {
		out = append(out, expression{field.NewPath("spec", "auditAnnotations").Index(i).Child("valueExpression"), &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, opts})
	}
	return out
}

func mutatingExpressions(p *admissionregistrationv1.MutatingAdmissionPolicy, opts plugincel.OptionalVariableDeclarations) []expression {
	out := matchConditionExpressions(p.Spec.MatchConditions, opts)
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	for i, m := range p.Spec.Mutations {
		path := field.NewPath("spec", "mutations").Index(i)
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			out = append(out, expression{path.Child("jsonPatch", "expression"), &patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts})
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			out = append(out, expression{path.Child("applyConfiguration", "expression"), &patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts})
		}
	}
	return out
}
