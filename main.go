// Command hookback develops Kubernetes admission webhooks and controllers out
// of cluster: it serves HTTPS on this machine, registers itself with a remote
// kube-apiserver, runs controllers against it and cleans up when it stops.
//
// main stays thin: flags become Options, Options go to package constructors,
// and only main decides the exit code.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore default handling so a second one
		// exits at once even if cleanup hangs.
		<-ctx.Done()
		stop()
	}()
	err := newApp(os.Stdout, os.Stderr).RunContext(ctx, os.Args)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hookback:", err)
		var ec exitCoder
		if errors.As(err, &ec) {
			os.Exit(ec.ExitCode())
		}
		os.Exit(1)
	}
}

type exitCoder interface{ ExitCode() int }
