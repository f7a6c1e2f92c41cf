// Package admitmatch decides, with k8s.io/apiserver's own code, whether
// the apiserver calls a webhook (or applies a policy) for a request: the
// rule's resource patterns and the CEL matchConditions. hookback test
// (suite/), the chain view (chain/), audit (audit/) and lint (lint/) share
// it, so that they agree with each other and with the apiserver.
package admitmatch

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
)

// ResourceMatches is the apiserver's matching of a rule's resources
// ("pods", "pods/status", "*", "*/*", "*/status", "pods/*") against a
// resource and subresource (k8s.io/apiserver
// pkg/admission/plugin/webhook/predicates/rules/rules.go).
func ResourceMatches(patterns []string, resource, sub string) bool {
	for _, p := range patterns {
		res, psub, _ := strings.Cut(p, "/")
		switch {
		case p == "*/*":
			return true
		case p == "*" && sub == "":
			return true
		case res == "*" && psub == sub && sub != "":
			return true
		case res == resource && (psub == sub || (psub == "*" && sub != "")):
			return true
		}
	}
	return false
}

// compiler is the apiserver's CEL environment for matchConditions, made
// once: making it costs more than most evaluations.
var compiler = sync.OnceValue(func() cel.ConditionCompiler {
	return cel.NewConditionCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// Compiler is the condition compiler the apiserver's webhook accessors
// take (webhook.WebhookAccessor's GetCompiledMatcher).
func Compiler() cel.ConditionCompiler { return compiler() }

// Conditions compiles a webhook's or a policy's matchConditions as the
// apiserver does (the webhook accessors' GetCompiledMatcher;
// withParams for a policy's, whose expressions may read params). fail is
// the failurePolicy the result follows: under Ignore a condition that
// errors skips the webhook, under Fail (and nil) Match returns the error.
func Conditions(name string, conds []admissionregistrationv1.MatchCondition, withParams bool, fail *admissionregistrationv1.FailurePolicyType) matchconditions.Matcher {
	exprs := make([]cel.ExpressionAccessor, len(conds))
	for i, c := range conds {
		exprs[i] = &matchconditions.MatchCondition{Name: c.Name, Expression: c.Expression}
	}
	eval := compiler().CompileCondition(exprs, cel.OptionalVariableDeclarations{HasParams: withParams, HasAuthorizer: true}, environment.StoredExpressions)
	return matchconditions.NewMatcher(eval, fail, "webhook", "admit", name)
}

// Match evaluates m for attr with no params and no authorizer (an
// expression that reads them errors): false when a condition is false; an
// error, which names the failing conditions, when m follows failurePolicy
// Fail and one could not be evaluated.
func Match(ctx context.Context, m matchconditions.Matcher, attr apiadmission.Attributes) (bool, error) {
	va := &apiadmission.VersionedAttributes{Attributes: attr, VersionedKind: attr.GetKind(),
		VersionedObject: attr.GetObject(), VersionedOldObject: attr.GetOldObject()}
	res := m.Match(ctx, va, nil, nil)
	if res.Error != nil {
		return false, fmt.Errorf("matchConditions: %w", res.Error)
	}
	return res.Matches, nil
}

// Attributes are the request as the apiserver's admission chain sees it.
func Attributes(r *admissionv1.AdmissionRequest) (apiadmission.Attributes, error) {
	obj, err := ObjectOf(r.Object)
	if err != nil {
		return nil, fmt.Errorf("object: %w", err)
	}
	old, err := ObjectOf(r.OldObject)
	if err != nil {
		return nil, fmt.Errorf("oldObject: %w", err)
	}
	u := &user.DefaultInfo{Name: r.UserInfo.Username, UID: r.UserInfo.UID, Groups: r.UserInfo.Groups}
	if len(r.UserInfo.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range r.UserInfo.Extra {
			u.Extra[k] = v
		}
	}
	dry := r.DryRun != nil && *r.DryRun
	return apiadmission.NewAttributesRecord(obj, old, schema.GroupVersionKind(r.Kind), r.Namespace, r.Name,
		schema.GroupVersionResource(r.Resource), r.SubResource, apiadmission.Operation(r.Operation), nil, dry, u), nil
}

// ObjectOf is an object of a review as the admission chain holds it:
// unstructured, and nil when absent, as the apiserver passes it.
func ObjectOf(raw runtime.RawExtension) (runtime.Object, error) {
	if len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw.Raw, &m); err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
