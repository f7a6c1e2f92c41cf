// Package policy evaluates ValidatingAdmissionPolicies and
// MutatingAdmissionPolicies outside the apiserver with the apiserver's own
// policy code (k8s.io/apiserver pkg/admission/plugin/policy/{validating,
// mutating,generic,matching}, at the version client-go uses): the policies,
// their bindings and the bindings' param objects are read from manifests
// (Load), compiled as the admission plugins compile them (New), and each
// admission request is dispatched to them as the plugins dispatch it
// (Engine.Evaluate). What the plugins keep to themselves (each validation's
// result, each variable's value, each mutation's output) is recorded on the
// way through, so that a policy author sees why, not only what.
//
// The policies never see the cluster's informers: namespaces, params and
// the authorizer come from the files, or from a cluster when one is given.
package policy
