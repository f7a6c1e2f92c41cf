package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/controller"
	"github.com/hookback/hookback/webhook"
)

// featureFlags select and configure the built-in webhooks and controllers.
func featureFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringFlag{Name: "webhooks", EnvVars: env("webhooks"), Value: "all", Usage: "comma list of built-in webhooks to serve, or all or none (" + strings.Join(webhook.Names(), ", ") + ")"},
		&cli.StringFlag{Name: "controllers", EnvVars: env("controllers"), Value: "all", Usage: "comma list of controllers to run, or all or none (" + strings.Join(controller.Names(), ", ") + ")"},
	}, webhookConfigFlags()...)
}

// webhookConfigFlags configure the built-in webhooks.
func webhookConfigFlags() []cli.Flag {
	d := webhook.DefaultOptions()
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "banned-words", EnvVars: env("banned-words"), Value: cli.NewStringSlice(d.BannedWords...), Usage: "pod-name: words a pod name must not contain"},
		&cli.StringFlag{Name: "sidecar-image", EnvVars: env("sidecar-image"), Value: d.SidecarImage, Usage: "pod-sidecar: image of the injected xxl-agent container"},
		&cli.Float64Flag{Name: "cpu-oversell-factor", EnvVars: env("cpu-oversell-factor"), Value: d.CPUOversellFactor, Usage: "node-status: multiply node allocatable CPU by this (1 disables)"},
	}
}

// list splits a comma list flag, dropping blanks; "none" is the empty list.
func list(c *cli.Context, name string) []string {
	var out []string
	for _, s := range strings.Split(c.String(name), ",") {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" && s != "none" {
			out = append(out, s)
		}
	}
	return out
}

func webhookOptions(c *cli.Context) webhook.Options {
	return webhook.Options{
		BannedWords:       c.StringSlice("banned-words"),
		SidecarImage:      c.String("sidecar-image"),
		CPUOversellFactor: c.Float64("cpu-oversell-factor"),
	}
}
