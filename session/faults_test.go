package session

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/hookback/hookback/fault"
)

// TestFaultSwitch: the inspector's switch parses what it is given, applies
// it to the one switch every webhook reads, logs each change once (the
// same fault again is no change), and a bad value changes nothing.
func TestFaultSwitch(t *testing.T) {
	var logs bytes.Buffer
	f := &faultSwitch{sw: fault.NewSwitch(fault.Fault{Kind: fault.Timeout}), log: slog.New(slog.NewTextHandler(&logs, nil)), hooks: 2}
	for _, step := range []struct {
		name, set, want string
		wantErr         bool
		wantLogs        int
	}{
		{name: "to error", set: "error", want: "error", wantLogs: 1},
		{name: "error again is no change", set: "error", want: "error", wantLogs: 1},
		{name: "to slow", set: "slow=2s", want: "slow=2s", wantLogs: 2},
		{name: "a bad value", set: "slow=-1s", want: "slow=2s", wantErr: true, wantLogs: 2},
		{name: "to none", set: "none", want: "none", wantLogs: 3},
	} {
		t.Run(step.name, func(t *testing.T) {
			err := f.SetFault(step.set)
			if (err != nil) != step.wantErr || f.Fault() != step.want {
				t.Fatalf("SetFault(%q) = %v; fault %s, want %s", step.set, err, f.Fault(), step.want)
			}
			if n := strings.Count(logs.String(), "fault switched from the inspector"); n != step.wantLogs {
				t.Errorf("%d log lines, want %d:\n%s", n, step.wantLogs, logs.String())
			}
		})
	}
}
