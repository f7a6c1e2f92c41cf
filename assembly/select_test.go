package assembly

import (
	"slices"
	"testing"
)

func TestSelect(t *testing.T) {
	valid := []string{"a", "b", "c"}
	tests := []struct {
		name string
		list []string
		want []string
		err  string
	}{
		{name: "all", list: []string{"all"}, want: valid},
		{name: "all in any case, with others", list: []string{"b", " ALL "}, want: valid},
		{name: "none", list: []string{"none"}, want: nil},
		{name: "empty", list: []string{""}, want: nil},
		{name: "names trimmed, deduplicated, in given order", list: []string{" c", "a", "c "}, want: []string{"c", "a"}},
		{name: "unknown", list: []string{"a", "d"}, err: `unknown thing "d": valid ones are a, b, c, or all or none`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Select(tc.list, valid, "thing")
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("Select(%q) = %q, %v; want %q", tc.list, got, err, tc.want)
			}
		})
	}
}
