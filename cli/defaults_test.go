package cli

import (
	"io"
	"testing"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/session"
)

// TestDefaultsAreTheLibrarys: start's flags default (and their help
// documents) what the library gives a zero Options, so a program that
// embeds hookback runs as `hookback start` does.
func TestDefaultsAreTheLibrarys(t *testing.T) {
	cliCfg, err := session.CompleteWhatRuns(defaultStartOptions().config(Extension{}, discardLog, io.Discard, true))
	if err != nil {
		t.Fatal(err)
	}
	libCfg, err := session.CompleteWhatRuns(session.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cli, lib := cliCfg.Options(), libCfg.Options()
	tests := []struct {
		name          string
		flag, library any
	}{
		{"--health-address", cli.HealthAddress, lib.HealthAddress},
		{"--lease-duration", cli.LeaseDuration, lib.LeaseDuration},
		{"--verify-timeout", cli.VerifyTimeout, lib.VerifyTimeout},
		{"--late-answer-timeout", cli.User.LateAnswerTimeout, lib.User.LateAnswerTimeout},
		{"--tunnel-namespace", cli.Tunnel.Namespace, lib.Tunnel.Namespace},
		{"reload interval", cli.ReloadInterval, lib.ReloadInterval},
		// No library default (a zero one is an error): the CLI's is the
		// library's constant.
		{"--port", cli.Port, session.DefaultPort},
		{"--lease-namespace", cli.LeaseNamespace, session.DefaultLeaseNamespace},
		{"--state-dir", cli.Certs.StateDir, session.DefaultStateDir()},
		{"--tls-mode", cli.Certs.Mode, certs.ModeSelfSigned},
		{"--session", cli.Session, session.DefaultSession()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.flag != tt.library {
				t.Errorf("the flag defaults to %v, the library to %v", tt.flag, tt.library)
			}
		})
	}
	t.Run("--late-answer-timeout 0 is off", func(t *testing.T) {
		o := defaultStartOptions()
		o.LateAnswerTimeout = 0
		if got := o.config(Extension{}, discardLog, io.Discard, true).User.LateAnswerTimeout; got >= 0 {
			t.Errorf("--late-answer-timeout 0 passes %s, want a negative timeout (off); the library's 0 is its default", got)
		}
	})
}
