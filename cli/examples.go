package cli

import (
	"slices"
	"strings"
)

// Example is one command line shown in --help. TestHelpExamplesRun
// (test/e2e/cli_test.go) runs every one of them against a real cluster, so none
// can be wrong: write only what runs there as written, with the files it
// names (review.json, my-webhooks.yaml.tmpl) and the HOOKBACK_* settings the
// test provides.
type Example struct {
	Command string
	// Comment is shown after the command.
	Comment string
	// Serves: the command keeps running once ready (start); the test waits
	// for the banner and stops it with SIGTERM.
	Serves bool
}

// Examples lists every Example of every command, for the test.
func Examples() map[string][]Example {
	return map[string][]Example{
		"":          appExamples,
		"check":     checkExamples,
		"start":     slices.Concat(startExamples, startPolicyExamples),
		"render":    slices.Concat(renderExamples, renderPolicyExamples),
		"cleanup":   cleanupExamples,
		"replay":    replayExamples,
		"audit":     auditExamples,
		"lint":      lintExamples,
		"load":      loadExamples,
		"drill":     drillExamples,
		"test":      testExamples,
		"validate":  validateExamples,
		"ca":        caExamples,
		"rbac":      rbacExamples,
		"serve":     serveExamples,
		"uninstall": uninstallExamples,
		"relay":     relayExamples,
		"cluster":   clusterExamples,
	}
}

func examplesText(ex []Example) string {
	if len(ex) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n\nExamples:\n")
	for _, e := range ex {
		b.WriteString("   " + e.Command)
		if e.Comment != "" {
			b.WriteString("   # " + e.Comment)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

var appExamples = []Example{
	{Command: "hookback check", Comment: "can I reach the cluster, and may I do what hookback needs?"},
	{Command: "hookback check --log-level debug", Comment: "global flags go before or after the command"},
	{Command: "hookback --log-format json version"},
}
