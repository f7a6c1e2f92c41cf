package cli

import (
	"strings"
	"testing"
)

// TestFuzzOptionsValidate: the fuzzer's flags are refused without
// --conversion-fuzz, and negative counts with what to give instead.
func TestFuzzOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    fuzzOptions
		want string
	}{
		{"off", fuzzOptions{}, ""},
		{"from the cluster", fuzzOptions{N: 10, FromCluster: 50}, ""},
		{"strict", fuzzOptions{N: 10, Strict: true}, ""},
		{"from-cluster without the fuzzer", fuzzOptions{FromCluster: 5}, "--seed, --from-cluster and --conversion-fuzz-strict are for --conversion-fuzz N"},
		{"strict without the fuzzer", fuzzOptions{Strict: true}, "--seed, --from-cluster and --conversion-fuzz-strict are for --conversion-fuzz N"},
		{"negative from-cluster", fuzzOptions{N: 3, FromCluster: -1}, "--from-cluster -1: want 0 (no cluster) or the most objects to list per CRD"},
		{"negative count", fuzzOptions{N: -2}, "--conversion-fuzz -2: want 0 (off) or more"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate() = %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}
