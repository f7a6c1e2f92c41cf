package cli

import (
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"
)

// withGlobal returns a command's flags with the global ones added, so they
// also work after the command; their values are read from wherever the user
// set them (lookup).
func withGlobal(g *GlobalOptions, b *binder) []cli.Flag {
	g.bind(b)
	return b.flags
}

// defaultStateDir is $XDG_STATE_HOME/hookback, else ~/.local/state/hookback.
func defaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "hookback")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "hookback")
	}
	return filepath.Join(os.TempDir(), "hookback-state")
}

// globalFlagNames are the flags of GlobalOptions.
var globalFlagNames = []string{"kubeconfig", "context", "log-format", "log-level"}
