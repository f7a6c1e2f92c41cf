package cli

import (
	"strings"
	"testing"
)

// TestTestWatchFlags: --watch prints a table of what changed; the other
// formats, --update and stdin are refused with what to do.
func TestTestWatchFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{name: "json", args: []string{"-o", "json"}, want: `--output "json" with --watch: want table`},
		{name: "update", args: []string{"--update"}, want: "--watch reruns the suite as it is: not with --update or --conversion-fuzz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"test", "--watch", "--webhooks", "none"}, tc.args...)
			_, _, err := run(t, append(args, "../testdata/crdvalidate/suite")...)
			if err == nil || !strings.HasPrefix(err.Error(), "exit 2") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want exit 2 saying %q", err, tc.want)
			}
		})
	}
}
