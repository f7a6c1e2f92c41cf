// Package chain tells, for one request that reached your webhook, what the
// whole admission chain did to the object: what it was as submitted, what
// each mutating configuration and MutatingAdmissionPolicy sorted before
// your webhook changed, what you changed, what was changed after you
// (reinvocation rounds included) and what the validators finally saw, with
// warnings where a later change undid your work.
//
// The views come from observer webhooks that always allow and never patch
// (Observer): one whose configuration sorts before every other mutating
// configuration, one that sorts after every other, and a validating one.
// Their reviews and your webhook's are joined into one Chain per request
// (Joiner). The apiserver gives every webhook call its own review uid
// (k8s.io/apiserver pkg/admission/plugin/webhook/request/admissionreview.go,
// CreateAdmissionObjects), so the join is on what one request keeps across
// its calls: operation, resource, namespace, name (generateName on
// CREATE), user and dry-run, in the order the apiserver makes the calls.
//
// Each difference between two stages is a field change (a JSON pointer
// with the old and new value), attributed to what could have made it: the
// configurations and policies of the cluster (Catalog) whose rules match
// the request and that run between those stages, in the apiserver's order.
// Where the apiserver's audit log is readable its patch annotations name
// the exact webhook (Exact).
package chain
