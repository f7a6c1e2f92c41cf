package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hookback/hookback/tunnel"
)

// relaySecretEnv carries the session secret into the relay pod (from a
// Secret, never on the command line, where ps would show it).
const relaySecretEnv = "HOOKBACK_RELAY_SECRET"

var relayExamples = []Example{
	{Command: "hookback relay --listen 127.0.0.1:0 --control 127.0.0.1:0 --metrics-address 127.0.0.1:0", Comment: "with $HOOKBACK_RELAY_SECRET set, as in the relay pod", Serves: true},
}

// RelayOptions are relay's flags.
type RelayOptions struct {
	GlobalOptions
	Listen, Control, Metrics, Secret string
}

func (o *RelayOptions) bind(b *binder) {
	o.GlobalOptions.bind(b)
	bind(b, &o.Listen, "listen", catTunnel, "relay: host:port the apiserver's connections arrive on (the relay Service's target port)")
	bind(b, &o.Control, "control", catTunnel, "relay: host:port the laptop attaches on, through the apiserver's pod port-forward")
	bind(b, &o.Metrics, "metrics-address", catTunnel, "relay: host:port of /metrics (laptop attached, connections carried or closed for want of one) and /healthz; empty: none")
}

// Validate reports every problem at once.
func (o RelayOptions) Validate() error {
	errs := []error{o.GlobalOptions.Validate()}
	if o.Secret == "" {
		errs = append(errs, fmt.Errorf("$%s is empty: the relay needs the session's secret (start --tunnel sets it from a Secret)", relaySecretEnv))
	}
	return errors.Join(errs...)
}

func relayCommand() (*cli.Command, *binder) {
	o, b := RelayOptions{GlobalOptions: defaultGlobalOptions(), Listen: ":8443", Control: ":9443", Metrics: ""}, &binder{}
	o.bind(b)
	cmd := &cli.Command{
		Name:  "relay",
		Usage: "the in-cluster end of start --tunnel: carry the apiserver's connections to the attached laptop",
		Description: `relay runs in the pod start --tunnel deploys. It accepts the apiserver's connections on
--listen (the relay Service's target port) and carries each one, still TLS-encrypted, as a
stream over the single connection the laptop attaches on --control through the apiserver's
pod port-forward. Only a laptop that presents $HOOKBACK_RELAY_SECRET may attach; with none
attached, connections are closed at once, so the webhooks fail open.` + examplesText(relayExamples),
		Flags: b.flags,
		Action: func(c *cli.Context) error {
			b.load(c)
			o.Secret = strings.TrimSpace(os.Getenv(relaySecretEnv))
			if err := o.Validate(); err != nil {
				return usage(err)
			}
			log := o.logger(c.App.ErrWriter)
			r, err := tunnel.New(tunnel.Options{Listen: o.Listen, Control: o.Control, Metrics: o.Metrics, Secret: o.Secret, Log: log})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "hookback is ready: relaying %s to the laptop attached on %s\n", r.Addr(), r.ControlAddr())
			return r.Start(c.Context)
		},
	}
	return cmd, b
}
