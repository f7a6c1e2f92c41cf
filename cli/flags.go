package cli

import (
	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/session"
)

// withGlobal returns a command's flags with the global ones added, so they
// also work after the command; their values are read from wherever the user
// set them (lookup).
func withGlobal(g *GlobalOptions, b *binder) []cli.Flag {
	g.bind(b)
	return b.flags
}

// defaultStateDir is $XDG_STATE_HOME/hookback, else ~/.local/state/hookback.
func defaultStateDir() string { return session.DefaultStateDir() }

// globalFlagNames are the flags of GlobalOptions.
var globalFlagNames = []string{"kubeconfig", "context", "log-format", "log-level"}
