// Package cli is hookback's command line: urfave/cli/v2 commands whose flags
// (each a field of its command's options struct, bound once; binder.go)
// become typed Options, validated all at once, then a plan.Options or a
// direct call. It is the only package that
// sees *cli.Context, and Run is the only thing main calls.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/admission"
)

// Version is set at build time with -ldflags "-X github.com/hookback/hookback/cli.Version=...".
var Version = "dev"

// Extension is what a program that embeds hookback adds: its own webhooks,
// served beside the built-ins, and the template that registers them (the
// default template when --template is not given).
type Extension struct {
	Template []byte
	Webhooks []admission.Webhook
}

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	// exitUsage: bad flags or arguments, or (check) missing permissions.
	exitUsage = 2
)

// Run runs hookback with args (args[0] is the program name) and returns the
// exit code; errors are printed to stderr as sentences.
func Run(ctx context.Context, args []string, ext Extension, stdout, stderr io.Writer) int {
	app := newApp(ext, stdout, stderr)
	err := app.RunContext(ctx, interspersed(app, args))
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "Error:", withFlagNames(err))
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return exitFailure
}

func newApp(ext Extension, stdout, stderr io.Writer) *cli.App {
	// The app's own global flags: lookup reads them when the command's
	// copies were not set.
	global, gb := defaultGlobalOptions(), &binder{}
	global.bind(gb)
	app := &cli.App{
		Name:    "hookback",
		Usage:   "develop Kubernetes admission webhooks and controllers out of cluster",
		Version: version(),
		Description: `hookback serves admission webhooks over HTTPS from this machine, registers them
with a remote kube-apiserver, runs controllers against it, and removes everything it
wrote when it stops. Every flag can also be set through HOOKBACK_<FLAG>, for example
HOOKBACK_CONTEXT=kind-dev; global flags (--kubeconfig, --context, --log-format,
--log-level) go before or after the command.` + examplesText(appExamples),
		Writer:               stdout,
		ErrWriter:            stderr,
		Flags:                gb.flags,
		EnableBashCompletion: true,
		// Only main exits: keep urfave/cli from calling os.Exit itself.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return cli.Exit(fmt.Sprintf("%v (see --help)", err), exitUsage)
		},
	}
	app.Commands = commands(ext).cmds
	for _, cmd := range app.Commands {
		if cmd.OnUsageError == nil {
			cmd.OnUsageError = app.OnUsageError
		}
	}
	return app
}

// usage marks err as a problem with the flags or arguments.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return cli.Exit(withFlagNames(err).Error(), exitUsage)
}

// exit ends a command with err and an exit code. It keeps err itself,
// where cli.Exit(err.Error(), code) would keep only its text: Run then
// still finds the library's field errors in it and shows them with flag
// names (TestNoErrorLosesItsFields), and errors.Is still sees it.
func exit(err error, code int) error {
	return &exitError{err: err, code: code}
}

type exitError struct {
	err  error
	code int
}

var _ cli.ExitCoder = (*exitError)(nil)

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }

func versionCommand() (*cli.Command, *binder) {
	cmd := &cli.Command{
		Name:  "version",
		Usage: "print the hookback version and the commit it was built from",
		Action: func(c *cli.Context) error {
			_, err := fmt.Fprintln(c.App.Writer, currentBuild())
			return err
		},
	}
	return cmd, nil
}

// commandSet is every command with the binder of its flags (nil for a
// command without any), so a test can prove each flag fills a field.
type commandSet struct {
	cmds    []*cli.Command
	binders map[string]*binder
}

func (s *commandSet) add(cmd *cli.Command, b *binder) {
	s.cmds = append(s.cmds, cmd)
	if b != nil {
		s.binders[cmd.Name] = b
	}
}

func commands(ext Extension) *commandSet {
	s := &commandSet{binders: map[string]*binder{}}
	s.add(versionCommand())
	s.add(checkCommand())
	s.add(rbacCommand())
	s.add(startCommand(ext))
	s.add(renderCommand(ext))
	s.add(serveCommand(ext))
	s.add(uninstallCommand())
	s.add(relayCommand())
	s.add(cleanupCommand())
	s.add(replayCommand())
	s.add(auditCommand(ext))
	s.add(lintCommand())
	s.add(loadCommand(ext))
	s.add(drillCommand(ext))
	s.add(testCommand(ext))
	s.add(validateCommand())
	s.add(caCommand())
	s.add(clusterCommand())
	s.add(completionCommand())
	return s
}
