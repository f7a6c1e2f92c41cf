package policy

// Evaluation is what the policies make of one admission request: every
// binding that matched, in the order evaluated (mutating policies first,
// as the apiserver runs them, then validating ones on the mutated
// object), and what the apiserver would answer.
type Evaluation struct {
	// Allowed is false when a binding denies (a Deny validationAction, or
	// an error under failurePolicy Fail).
	Allowed bool `json:"allowed"`
	// Message is the apiserver's message for the first denial.
	Message string `json:"message,omitempty"`
	// Warnings are the apiserver's warnings (Warn validationActions).
	Warnings []string `json:"warnings,omitempty"`
	// Patched says the mutating policies changed the object; Patch is the
	// change as JSON patch operations against the request's object, and
	// Object the object they produced.
	Patched bool           `json:"patched,omitempty"`
	Patch   []PatchOp      `json:"patch,omitempty"`
	Object  map[string]any `json:"-"`
	// Bindings are the bindings whose policy and binding matched.
	Bindings []BindingResult `json:"bindings,omitempty"`
}

// Decision is what one binding's evaluation came to.
type Decision string

// Decisions.
const (
	// Admit: every validation held (or the matchConditions excluded the
	// request), or the mutations applied.
	Admit Decision = "admit"
	// Deny: a validation failed; what the apiserver does with it is in
	// Actions.
	Deny Decision = "deny"
	// Error: an expression or the configuration failed; Actions says
	// whether failurePolicy Fail turned it into a denial.
	Error Decision = "error"
	// Excluded: the matchConditions did not match; nothing ran.
	Excluded Decision = "excluded"
)

// Actions the apiserver takes on a binding's result.
const (
	ActionDeny   = "deny"
	ActionWarn   = "warn"
	ActionAudit  = "audit"
	ActionMutate = "mutate"
	// ActionIgnore: an error that failurePolicy Ignore lets through.
	ActionIgnore = "ignore"
)

// BindingResult is one policy through one of its bindings.
type BindingResult struct {
	Kind    string `json:"kind"`
	Policy  string `json:"policy"`
	Binding string `json:"binding"`
	// Params names the param objects used ("namespace/name"), one
	// evaluation each.
	Params   []string `json:"params,omitempty"`
	Decision Decision `json:"decision"`
	// Actions are what the apiserver does with the decision (deny, warn,
	// audit, mutate, ignore); none when it admits.
	Actions []string `json:"actions,omitempty"`
	// Message is the apiserver's message (the denial's, or the warning's
	// text), as the client would see it.
	Message     string             `json:"message,omitempty"`
	Validations []ValidationResult `json:"validations,omitempty"`
	Variables   []VariableValue    `json:"variables,omitempty"`
	// AuditAnnotations are the auditAnnotations published (key as the
	// audit log has it: policy/key).
	AuditAnnotations map[string]string `json:"auditAnnotations,omitempty"`
	Mutations        []MutationResult  `json:"mutations,omitempty"`
	// Patch is what this binding's mutations changed, as JSON patch
	// operations against the object they were given.
	Patch []PatchOp `json:"patch,omitempty"`
}

// ValidationResult is one validation's outcome for one param.
type ValidationResult struct {
	Index      int    `json:"index"`
	Expression string `json:"expression"`
	// Result is true, false or error.
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
}

// VariableValue is one variable's value (or error) for one param.
type VariableValue struct {
	Name  string `json:"name"`
	Value any    `json:"value,omitempty"`
	Error string `json:"error,omitempty"`
}

// MutationResult is one mutation's outcome.
type MutationResult struct {
	Index     int       `json:"index"`
	PatchType string    `json:"patchType"`
	Error     string    `json:"error,omitempty"`
	Patch     []PatchOp `json:"patch,omitempty"`
}

// PatchOp is one JSON patch operation.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Reason is what a webhook written for the same rule would most likely
// say: the first denying binding's failing validation message, without
// the apiserver's "ValidatingAdmissionPolicy '...' with binding '...'
// denied request: " prefix; the apiserver's message when no validation
// failed (a configuration error, a mutation's).
func (ev *Evaluation) Reason() string {
	if ev.Allowed {
		return ""
	}
	for _, b := range ev.Bindings {
		if len(b.Actions) == 0 || b.Actions[0] != ActionDeny {
			continue
		}
		for _, v := range b.Validations {
			if v.Result != "true" {
				return v.Message
			}
		}
	}
	return ev.Message
}
