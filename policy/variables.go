package policy

import (
	"context"
	"fmt"
	"reflect"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types/ref"
	"google.golang.org/protobuf/types/known/structpb"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// variableRef reads one stored variable back: the expression
// `variables.NAME`, compiled by the policy's own composited compiler, so
// that its value is the one the policy's expressions saw.
type variableRef struct{ name string }

func (v variableRef) GetExpression() string      { return "variables." + v.name }
func (v variableRef) ReturnTypes() []*celgo.Type { return []*celgo.Type{celgo.AnyType, celgo.DynType} }

// variablesEvaluator is nil for a policy without variables.
func variablesEvaluator(c *plugincel.CompositedCompiler, vars []admissionregistrationv1.Variable, opts plugincel.OptionalVariableDeclarations) plugincel.ConditionEvaluator {
	if c == nil || len(vars) == 0 {
		return nil
	}
	acc := make([]plugincel.ExpressionAccessor, len(vars))
	for i, v := range vars {
		acc[i] = variableRef{name: v.Name}
	}
	return c.CompileCondition(acc, opts, environment.StoredExpressions)
}

// variables evaluates a policy's variables for one call, as its
// expressions saw them. This is a second evaluation, made for the
// inspector: it spends its own cost budget, not the request's.
func (e *Engine) variables(ctx context.Context, ev plugincel.ConditionEvaluator, names []admissionregistrationv1.Variable, c call) []VariableValue {
	if ev == nil || c.attr == nil {
		return nil
	}
	req := plugincel.CreateAdmissionRequest(c.attr.Attributes, metav1.GroupVersionResource(c.resource), metav1.GroupVersionKind(c.attr.VersionedKind))
	res, _, err := ev.ForInput(ctx, c.attr, req, plugincel.OptionalVariableBindings{VersionedParams: c.params, Authorizer: e.authz}, plugincel.CreateNamespaceObject(c.namespace), celconfig.RuntimeCELCostBudget)
	out := make([]VariableValue, len(names))
	for i, v := range names {
		out[i].Name = v.Name
		switch {
		case err != nil:
			out[i].Error = err.Error()
		case i >= len(res):
		case res[i].Error != nil:
			out[i].Error = res[i].Error.Error()
		default:
			out[i].Value = native(res[i].EvalResult)
		}
	}
	return out
}

// native turns a CEL value into plain JSON-able Go values.
func native(v ref.Val) any {
	if v == nil {
		return nil
	}
	if pb, err := v.ConvertToNative(reflect.TypeOf(&structpb.Value{})); err == nil {
		if s, ok := pb.(*structpb.Value); ok {
			return s.AsInterface()
		}
	}
	return fmt.Sprint(v.Value())
}
