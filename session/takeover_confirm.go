package session

import (
	"github.com/hookback/hookback/field"
	"github.com/hookback/hookback/kubeconfig"
	"github.com/hookback/hookback/plan"
	"github.com/hookback/hookback/registration"
	"github.com/hookback/hookback/takeover"
)

// confirm is confirmTakeOver for start, before anything is written.
func (t *takeOverRun) confirm(cl *kubeconfig.Cluster, o plan.Options) error {
	if t == nil {
		return nil
	}
	_, why := registration.LocalCluster(cl.Config.Server, cl.Config.Context)
	return confirmTakeOver(t.ops, o.Scope.Local, why, o.TakeOverConfirm)
}

// confirmTakeOver: off a local cluster a take-over pauses what colleagues
// use too (the operator's webhooks and conversions then reach this
// machine, and nothing once it stops), so it needs
// {plan.Options.TakeOverConfirm}; the refusal names who is affected.
// why says what made the cluster not local ("" when it is local).
func confirmTakeOver(ops []*takeover.Operator, local bool, why string, confirmed bool) error {
	if local || confirmed || len(ops) == 0 {
		return nil
	}
	return field.Advise("plan.Options.TakeOverConfirm", "refusing to take over on a cluster that is not local (%s) without {plan.Options.TakeOverConfirm}: "+
		"it affects everyone who uses it: %s. Tell them, then add {plan.Options.TakeOverConfirm}; or run without {plan.Options.TakeOver}, "+
		"your webhooks registered beside the deployed ones (docs/take-over.md)", why, takeover.Affected(ops))
}
