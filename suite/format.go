// Package suite runs regression suites against admission and conversion
// webhooks (`hookback test`): cases whose input is a review the apiserver
// really sent (a recording of start --record-dir, the inspector's
// download) or a plain manifest with an operation, and whose expectations
// say what the webhook must answer. Each case goes to every webhook the
// apiserver would call for it, matched with the apiserver's own code
// (k8s.io/apiserver's webhook predicates and CEL matchConditions), and the
// answers are compared, reported (table, JSON, JUnit) and, with --update,
// written back as the new expectations. No cluster is involved.
package suite

import (
	"encoding/json"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// APIVersion is the apiVersion of suite files.
const APIVersion = "hookback.dev/v1alpha1"

// Kinds of suite files: a Suite holds a list of cases, a Case file is one
// case (what `hookback test init` and the inspector write).
const (
	KindSuite = "Suite"
	KindCase  = "Case"
)

// Suite is a file of kind Suite.
type Suite struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Ignore are more paths every case of the file ignores when comparing
	// objects (see Case.Ignore).
	Ignore []string `json:"ignore,omitempty"`
	Cases  []Case   `json:"cases"`
}

// Case is one input and what the webhooks must answer to it. The input is
// exactly one of: Review (an AdmissionReview or ConversionReview as the
// apiserver sent it), Record (a recording file), Object/OldObject with an
// Operation (a plain manifest), or Conversion.
type Case struct {
	// Name names the case in the output; in a Case file it defaults to the
	// file's name.
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	// Webhooks are the webhooks (names, or hookback paths) the case is
	// sent to; empty: every webhook the apiserver would call for it.
	Webhooks []string `json:"webhooks,omitempty"`
	// ConfigurationKind narrows Webhooks to those declared in
	// configurations of this kind (MutatingWebhookConfiguration,
	// ValidatingWebhookConfiguration; for --policy MutatingAdmissionPolicy
	// or ValidatingAdmissionPolicy): a webhook's name is unique only within
	// its configuration, and a name that webhooks of two kinds share is an
	// error without it. test init writes the kind it recorded.
	ConfigurationKind string `json:"configurationKind,omitempty"`
	// Path is where hookback served the webhook a recorded case came from
	// (test init writes it): among the webhooks named, those served there
	// when any is; with your server but not its manifests (--upstream
	// alone), the case goes to your server at that path.
	Path string `json:"path,omitempty"`

	// Review is an AdmissionReview (or ConversionReview) request, sent as
	// it is with a fresh uid.
	Review json.RawMessage `json:"review,omitempty"`
	// Record is a recording (start --record-dir, the inspector's download),
	// relative to the suite file: its review is sent.
	Record string `json:"record,omitempty"`

	// Operation is CREATE, UPDATE, DELETE or CONNECT.
	Operation string `json:"operation,omitempty"`
	// Object and OldObject (inline), or ObjectFile and OldObjectFile
	// (relative to the suite file): UPDATE needs both, DELETE an old
	// object.
	Object        json.RawMessage `json:"object,omitempty"`
	ObjectFile    string          `json:"objectFile,omitempty"`
	OldObject     json.RawMessage `json:"oldObject,omitempty"`
	OldObjectFile string          `json:"oldObjectFile,omitempty"`
	// Resource is the object's plural resource (default: guessed from its
	// kind, as kubectl does offline: Pod -> pods); Subresource such as
	// status or eviction.
	Resource    string `json:"resource,omitempty"`
	Subresource string `json:"subresource,omitempty"`
	// Namespace defaults to the object's; NamespaceLabels are the labels
	// of that namespace, for namespaceSelectors (kubernetes.io/metadata.name
	// is always set).
	Namespace       string            `json:"namespace,omitempty"`
	NamespaceLabels map[string]string `json:"namespaceLabels,omitempty"`
	// UserInfo is who makes the request (default: a user named
	// hookback-test).
	UserInfo *authenticationv1.UserInfo `json:"userInfo,omitempty"`
	DryRun   bool                       `json:"dryRun,omitempty"`

	// Conversion is a ConversionReview case: an object in one version and
	// the version to convert it to; the expected object is Expect.Object.
	Conversion *Conversion `json:"conversion,omitempty"`

	// Ignore are more paths to ignore when comparing objects, beyond those
	// that change from run to run (DefaultIgnore): JSON pointers where *
	// matches any one key or index, such as /metadata/annotations/x or
	// /spec/containers/*/image.
	Ignore []string `json:"ignore,omitempty"`

	// RequireOperations (UPDATE, DELETE) are the operations every
	// webhook a CREATE case goes to must also be called for on the same
	// object: a webhook whose configuration never matches one fails the
	// case, where otherwise it is a note.
	RequireOperations []string `json:"requireOperations,omitempty"`

	Expect Expect `json:"expect"`
	// ExpectWebhooks are the expectations of single webhooks, by name, in
	// place of Expect: in a chain, each mutating webhook's row holds the
	// object as it left that webhook (patched by those before it too).
	ExpectWebhooks map[string]Expect `json:"expectWebhooks,omitempty"`
}

// Conversion is the input of a conversion case.
type Conversion struct {
	// CRD names the CustomResourceDefinition whose conversion webhook
	// converts (default: the only one, or the one of the object's group).
	CRD string `json:"crd,omitempty"`
	// Object (or ObjectFile) is the object in its version.
	Object     json.RawMessage `json:"object,omitempty"`
	ObjectFile string          `json:"objectFile,omitempty"`
	// DesiredAPIVersion is the version to convert to, group/version.
	DesiredAPIVersion string `json:"desiredAPIVersion"`
	// Via, when set (group/version), makes the case a round trip: the
	// object is first converted to Via, and the result to
	// DesiredAPIVersion (the object's own version, for the cases the
	// conversion fuzzer writes: a round trip must lose nothing).
	Via string `json:"via,omitempty"`
}

// Results a case can expect.
const (
	Allowed    = "allowed"
	Denied     = "denied"
	Patched    = "patched"
	Error      = "error"
	Skip       = "skip"
	AsRecorded = "asRecorded"
	Converted  = "converted"
	Failed     = "failed"
)

// Results lists what Expect.Result takes.
var Results = []string{Allowed, Denied, Patched, Error, Skip, AsRecorded, Converted, Failed}

// Expect is what every webhook the case is sent to must answer.
type Expect struct {
	// Result is allowed, denied, patched, error (the call failed or the
	// answer was invalid), skip (no webhook is called for this input),
	// asRecorded (the answer recorded with Record or Review), or for a
	// conversion converted or failed.
	Result string `json:"result"`
	// Code is the status code of a denial.
	Code int32 `json:"code,omitempty"`
	// Message must be contained in the answer's message (MessageRegexp:
	// match it).
	Message       string `json:"message,omitempty"`
	MessageRegexp string `json:"messageRegexp,omitempty"`
	// Object (or ObjectFile) is the object after the patch (patched), or
	// the converted object (converted).
	Object     json.RawMessage `json:"object,omitempty"`
	ObjectFile string          `json:"objectFile,omitempty"`
	// Patch is the exact JSON patch operations (patched), as an
	// alternative to Object.
	Patch json.RawMessage `json:"patch,omitempty"`
	// Warnings are the warnings the answer must carry, each contained in
	// one of them.
	Warnings []string `json:"warnings,omitempty"`
}

// DefaultIgnore are the paths that change from one run to the next and
// that every comparison of objects ignores; a generated name is ignored
// where the object has a generateName.
var DefaultIgnore = []string{
	"/metadata/uid",
	"/metadata/resourceVersion",
	"/metadata/creationTimestamp",
	"/metadata/managedFields",
	"/metadata/generation",
}
