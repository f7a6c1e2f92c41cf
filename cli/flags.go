package cli

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/internal/report"
	"github.com/hookback/hookback/plan"
)

// withGlobal returns a command's flags with the global ones added, so they
// also work after the command; their values are read from wherever the user
// set them (lookup).
func withGlobal(g *GlobalOptions, b *binder) []cli.Flag {
	g.bind(b)
	return b.flags
}

// defaultStateDir is $XDG_STATE_HOME/hookback, else ~/.local/state/hookback.
func defaultStateDir() string { return plan.DefaultStateDir() }

// globalFlagNames are the flags of GlobalOptions.
var globalFlagNames = []string{"kubeconfig", "context", "log-format", "log-level"}

// checkOutput validates --output against the formats a command's report
// supports (v is a zero value of it), naming them.
func checkOutput(format string, v any) error {
	if report.Check(format, v) == nil {
		return nil
	}
	return fmt.Errorf("--output %q: want one of %s", format, strings.Join(report.Names(v), ", "))
}
