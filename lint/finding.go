package lint

import (
	"fmt"
	"strings"
)

// Severity ranks findings: an error is an outage the configuration can
// cause, a warning a weakness that may become one, info a note.
type Severity string

// The severities, from the least.
const (
	Info    Severity = "info"
	Warning Severity = "warning"
	Error   Severity = "error"
)

// Severities lists them from the least.
var Severities = []Severity{Info, Warning, Error}

func (s Severity) rank() int {
	for i, v := range Severities {
		if v == s {
			return i
		}
	}
	return -1
}

// AtLeast reports whether s is min or above.
func (s Severity) AtLeast(min Severity) bool { return s.rank() >= min.rank() }

// PatchOp is one RFC 6902 JSON patch operation on the object a finding
// names.
type PatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Finding is one way a configuration can take the cluster down, or weaken
// what it enforces.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	// Object is "Kind/name" of the configuration.
	Object string `json:"object"`
	// Webhook is the webhook's name, when the finding is about one.
	Webhook string `json:"webhook,omitempty"`
	// Path is the field path in the object: webhooks[0].failurePolicy.
	Path    string `json:"path"`
	Message string `json:"message"`
	// Link is the documentation section or incident that says why.
	Link string `json:"link"`
	// Fix is a JSON patch of the object that removes the finding, when one
	// does; Advice says what to do otherwise (or what the patch assumes).
	Fix    []PatchOp `json:"fix,omitempty"`
	Advice string    `json:"advice,omitempty"`
	// Source and Line are where the object was read ("" for the cluster;
	// Line 0 when unknown).
	Source string `json:"source,omitempty"`
	Line   int    `json:"line,omitempty"`
	// Suppressed is the reason written in the object's IgnoreAnnotation:
	// the finding is reported, not counted.
	Suppressed string `json:"suppressed,omitempty"`
}

// Location is "source:line", "source" or "cluster".
func (f Finding) Location() string {
	switch {
	case f.Source == "":
		return "cluster"
	case f.Line > 0:
		return fmt.Sprintf("%s:%d", f.Source, f.Line)
	}
	return f.Source
}

// finding starts a Finding about h.
func (h *Hook) finding(rule *Rule, sev Severity, path, format string, args ...any) Finding {
	return Finding{Rule: rule.ID, Severity: sev, Object: h.Config.Ref(), Webhook: h.Name, Path: h.Path(path),
		Message: fmt.Sprintf(format, args...), Link: rule.Link}
}

// names joins webhook names for messages.
func names(hooks []*Hook) string {
	var s []string
	for _, h := range hooks {
		s = append(s, fmt.Sprintf("%s (%ds%s)", h.Name, h.timeout(), map[bool]string{true: " x2, reinvoked"}[h.reinvoked()]))
	}
	return strings.Join(s, ", ")
}
