package chain

import (
	"context"
	"fmt"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"

	"github.com/hookback/hookback/internal/admitmatch"
)

// conditionsMatch evaluates matchConditions with the apiserver's code
// (admitmatch) for each view of r: true as soon as one view matches;
// false when they are false for every view, so the webhook or policy was
// not called. A condition that cannot be evaluated here (it errors, or
// reads params or the authorizer, which the view does not have) keeps it
// with a note: listed, not hidden.
func conditionsMatch(conds []admissionregistrationv1.MatchCondition, policy bool, r Request) (bool, string) {
	if len(conds) == 0 || len(r.Views) == 0 {
		return true, ""
	}
	m := compiled(conds, policy)
	var failed error
	for _, attr := range r.Views {
		ok, err := admitmatch.Match(context.Background(), m, attr)
		switch {
		case err != nil:
			failed = err
		case ok:
			return true, ""
		}
	}
	if failed != nil {
		return true, fmt.Sprintf("kept though its matchConditions could not be evaluated: %v", failed)
	}
	return false, ""
}

// conditionCache keeps compiled conditions by their text: compiling CEL
// costs more than evaluating it, and the catalog's configurations change
// rarely. It is emptied when it holds maxCompiled sets, so it stays
// bounded however often the cluster's configurations change.
var conditionCache = struct {
	sync.Mutex
	m map[string]matchconditions.Matcher
}{m: map[string]matchconditions.Matcher{}}

const maxCompiled = 512

// compiled are conds compiled to follow failurePolicy Fail, so that a
// condition that errors is reported rather than read as "not called".
func compiled(conds []admissionregistrationv1.MatchCondition, policy bool) matchconditions.Matcher {
	var key strings.Builder
	fmt.Fprint(&key, policy)
	for _, c := range conds {
		fmt.Fprintf(&key, "\x00%s\x00%s", c.Name, c.Expression)
	}
	conditionCache.Lock()
	defer conditionCache.Unlock()
	if m, ok := conditionCache.m[key.String()]; ok {
		return m
	}
	if len(conditionCache.m) >= maxCompiled {
		clear(conditionCache.m)
	}
	fail := admissionregistrationv1.Fail
	m := admitmatch.Conditions("chain", conds, policy, &fail)
	conditionCache.m[key.String()] = m
	return m
}
