// Command hookback develops Kubernetes admission webhooks and controllers out
// of cluster: it serves HTTPS on this machine, registers itself with a remote
// kube-apiserver, runs controllers against it and cleans up when it stops.
//
// main stays thin: a signal context, the embedded template, the exit code.
// Everything else is in package cli and what it calls.
package main

import (
	"context"
	_ "embed"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookback/hookback/cli"
)

//go:embed webhook-url.yaml.tmpl
var defaultTemplate []byte

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore default handling so a second one
		// exits at once even if cleanup hangs.
		<-ctx.Done()
		stop()
	}()
	code := cli.Run(ctx, os.Args, cli.Extension{Template: defaultTemplate}, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
