package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"
	"k8s.io/klog/v2"

	"github.com/hookback/hookback/kubeconfig"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// env names the environment variable that backs a flag.
func env(flag string) []string {
	return []string{"HOOKBACK_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:    "hookback",
		Usage:   "develop Kubernetes admission webhooks and controllers out of cluster",
		Version: version,
		Description: `hookback serves admission webhooks over HTTPS from this machine, registers them
with a remote kube-apiserver, runs controllers against it, and removes everything it
wrote when it stops. Every flag can also be set through HOOKBACK_<FLAG>, for example
HOOKBACK_CONTEXT=kind-dev.

Examples:
   hookback check                          # can I reach the cluster, and may I do what hookback needs?
   hookback --context kind-dev check
   KUBECONFIG=.cache/cluster/kubeconfig hookback check`,
		Writer:    stdout,
		ErrWriter: stderr,
		Flags:     globalFlags(),
		Commands: []*cli.Command{
			versionCommand(),
			checkCommand(),
			startCommand(),
			renderCommand(),
			cleanupCommand(),
			replayCommand(),
			caCommand(),
		},
		// Only main exits: keep urfave/cli from calling os.Exit itself.
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

func globalFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "kubeconfig", EnvVars: env("kubeconfig"), Usage: "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)"},
		&cli.StringFlag{Name: "context", EnvVars: env("context"), Usage: "kubeconfig context to use instead of current-context"},
		&cli.StringFlag{Name: "log-format", EnvVars: env("log-format"), Value: "text", Usage: "log format: text or json"},
		&cli.StringFlag{Name: "log-level", EnvVars: env("log-level"), Value: "info", Usage: "log level: debug, info, warn or error"},
	}
}

// loadConfig loads the kubeconfig the global flags name.
func loadConfig(c *cli.Context) (*kubeconfig.Config, error) {
	return kubeconfig.Load(kubeconfigOptions(c))
}

// kubeconfigOptions reads the global kubeconfig flags.
func kubeconfigOptions(c *cli.Context) kubeconfig.Options {
	return kubeconfig.Options{Path: c.String("kubeconfig"), Context: c.String("context")}
}

// newLogger builds the injected logger from the global flags.
func newLogger(c *cli.Context) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.String("log-level"))
	}
	opts := &slog.HandlerOptions{Level: level}
	var log *slog.Logger
	switch c.String("log-format") {
	case "text":
		log = slog.New(slog.NewTextHandler(c.App.ErrWriter, opts))
	case "json":
		log = slog.New(slog.NewJSONHandler(c.App.ErrWriter, opts))
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", c.String("log-format"))
	}
	// client-go logs through klog; send it through the same handler so the
	// output stays one structured stream. main owns this process-wide setting.
	klog.SetSlogLogger(log.With("component", "client-go"))
	return log, nil
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print the hookback version",
		Action: func(c *cli.Context) error {
			_, err := fmt.Fprintf(c.App.Writer, "hookback %s\n", version)
			return err
		},
	}
}

// exitError carries a non-default exit code up to main.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }
func (e *exitError) ExitCode() int { return e.code }
