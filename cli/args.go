package cli

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// interspersed moves a command's flags in front of its arguments, so
// `hookback replay DIR --upstream URL` works as kubectl users type it:
// urfave/cli stops reading flags at the first argument.
func interspersed(app *cli.App, args []string) []string {
	cmdAt := slices.IndexFunc(args, func(a string) bool { return app.Command(a) != nil })
	if cmdAt < 1 {
		return args
	}
	cmd := app.Command(args[cmdAt])
	// A subcommand right after its command (`hookback cluster up --name x`)
	// takes the flags that follow it.
	for cmdAt+1 < len(args) && cmd.Command(args[cmdAt+1]) != nil {
		cmdAt++
		cmd = cmd.Command(args[cmdAt])
	}
	var flags, positional []string
	rest := args[cmdAt+1:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			positional = append(positional, rest[i:]...)
			i = len(rest)
		case a == "--generate-bash-completion":
			positional = append(positional, a)
		case len(a) > 1 && strings.HasPrefix(a, "-"):
			flags = append(flags, a)
			if !strings.Contains(a, "=") && takesValue(cmd, strings.TrimLeft(a, "-")) && i+1 < len(rest) {
				i++
				flags = append(flags, rest[i])
			}
		default:
			positional = append(positional, a)
		}
	}
	out := append(slices.Clone(args[:cmdAt+1]), flags...)
	return append(out, positional...)
}

// takesValue reports whether the command's flag name expects a value.
func takesValue(cmd *cli.Command, name string) bool {
	for _, f := range cmd.Flags {
		if slices.Contains(f.Names(), name) {
			_, isBool := f.(*cli.BoolFlag)
			return !isBool
		}
	}
	return false
}
