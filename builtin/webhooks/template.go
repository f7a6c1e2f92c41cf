package webhooks

import (
	"bytes"
	"embed"
	"fmt"
	"strings"
)

// templates holds each row's webhook, as it goes into the template, and
// the head every row's webhook uses (its defines: clientConfig,
// namespaceSelector, optIn).
//
//go:embed templates
var templates embed.FS

// DefaultTemplate is webhook-url.yaml.tmpl as the table's rows make it:
// the head, then a MutatingWebhookConfiguration with each mutating row's
// webhook and a ValidatingWebhookConfiguration with each validating row's,
// in table order, each rendered when it is enabled. The file at the
// repository's root, which start embeds and users copy to edit, is this
// text (TestTemplateIsTheTable); a new built-in adds its webhook in
// templates/NAME.yaml.tmpl and its row.
func DefaultTemplate() ([]byte, error) {
	head, err := templates.ReadFile("templates/head.yaml.tmpl")
	if err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(head)
	for _, c := range []struct {
		mutating   bool
		kind, name string
		sep        string
	}{
		{true, "MutatingWebhookConfiguration", "hookback-mutating", ""},
		{false, "ValidatingWebhookConfiguration", "hookback-validating", "---\n"},
	} {
		var names []string
		var body strings.Builder
		for _, b := range builtins {
			if b.mutating != c.mutating {
				continue
			}
			hook, err := templates.ReadFile("templates/" + b.name + ".yaml.tmpl")
			if err != nil {
				return nil, fmt.Errorf("the template of built-in %s: %w", b.name, err)
			}
			names = append(names, fmt.Sprintf("(enabled %q)", b.name))
			fmt.Fprintf(&body, "{{- if enabled %q }}\n%s{{- end }}\n", b.name, hook)
		}
		if len(names) == 0 {
			continue
		}
		cond := names[0]
		if len(names) > 1 {
			cond = "or " + strings.Join(names, " ")
		} else {
			cond = strings.Trim(cond, "()")
		}
		fmt.Fprintf(out, "{{- if %s }}\n%sapiVersion: admissionregistration.k8s.io/v1\nkind: %s\nmetadata:\n  name: %s\nwebhooks:\n%s{{- end }}\n",
			cond, c.sep, c.kind, c.name, body.String())
	}
	return out.Bytes(), nil
}
