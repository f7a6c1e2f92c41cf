package policy

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The compile functions below do what the admission plugins' unexported
// compilePolicy functions do (k8s.io/apiserver
// pkg/admission/plugin/policy/{validating/plugin.go,mutating/compilation.go}),
// call for call, with the same base environment, options and modes. They
// keep the composited compiler, which the plugins drop, to read the
// variables' values back (variables.go).

// compiledValidating is a ValidatingAdmissionPolicy as the plugin compiles it.
type compiledValidating struct {
	validator validating.Validator
	compiler  *plugincel.CompositedCompiler
	opts      plugincel.OptionalVariableDeclarations
}

func compileValidating(p *admissionregistrationv1.ValidatingAdmissionPolicy) compiledValidating {
	hasParam := p.Spec.ParamKind != nil
	optionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: true}
	expressionOptionalVars := plugincel.OptionalVariableDeclarations{HasParams: hasParam, HasAuthorizer: false}
	failurePolicy := p.Spec.FailurePolicy
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return compiledValidating{validator: validating.NewValidator(nil, nil, nil, nil, failurePolicy, err)}
	}
	vars := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(vars, optionalVars, environment.StoredExpressions)

	var matcher matchconditions.Matcher
	if mc := p.Spec.MatchConditions; len(mc) > 0 {
		acc := make([]plugincel.ExpressionAccessor, len(mc))
		for i := range mc {
			acc[i] = (*matchconditions.MatchCondition)(&mc[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(acc, optionalVars, environment.StoredExpressions), failurePolicy, "policy", "validate", p.Name)
	}
	validations := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]plugincel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	annotations := make([]plugincel.ExpressionAccessor, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		annotations[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	v := validating.NewValidator(
		compiler.CompileCondition(validations, optionalVars, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(annotations, optionalVars, environment.StoredExpressions),
		compiler.CompileCondition(messages, expressionOptionalVars, environment.StoredExpressions),
		failurePolicy,
		nil,
	)
	return compiledValidating{validator: v, compiler: compiler, opts: optionalVars}
}

// compiledMutating is a MutatingAdmissionPolicy as the plugin compiles it.
type compiledMutating struct {
	evaluator mutating.PolicyEvaluator
	opts      plugincel.OptionalVariableDeclarations
}

func compileMutating(p *admissionregistrationv1.MutatingAdmissionPolicy) compiledMutating {
	opts := plugincel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	compiler, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return compiledMutating{evaluator: mutating.PolicyEvaluator{Error: fmt.Errorf("failed to initialize CEL compiler: %w", err)}}
	}
	vars := make([]plugincel.NamedExpressionAccessor, len(p.Spec.Variables))
	for i, v := range p.Spec.Variables {
		vars[i] = &validating.Variable{Name: v.Name, Expression: v.Expression}
	}
	compiler.CompileAndStoreVariables(vars, opts, environment.StoredExpressions)

	var matcher matchconditions.Matcher
	if mc := p.Spec.MatchConditions; len(mc) > 0 {
		acc := make([]plugincel.ExpressionAccessor, len(mc))
		for i := range mc {
			acc[i] = (*matchconditions.MatchCondition)(&mc[i])
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(acc, opts, environment.StoredExpressions), p.Spec.FailurePolicy, "policy", "validate", p.Name)
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	var patchers []patch.Patcher
	for _, m := range p.Spec.Mutations {
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeJSONPatch:
			if m.JSONPatch != nil {
				patchers = append(patchers, patch.NewJSONPatcher(compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, environment.StoredExpressions)))
			}
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			if m.ApplyConfiguration != nil {
				patchers = append(patchers, patch.NewApplyConfigurationPatcher(compiler.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions)))
			}
		}
	}
	return compiledMutating{evaluator: mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: compiler}, opts: opts}
}
