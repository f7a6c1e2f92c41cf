package admissionhttp

import "testing"

func TestCountOps(t *testing.T) {
	tests := []struct {
		name  string
		patch string
		want  int
	}{
		{name: "none", patch: "", want: 0},
		{name: "empty array", patch: "[]", want: 0},
		{name: "two ops", patch: `[{"op":"add","path":"/a","value":{"x":[1,2]}},{"op":"remove","path":"/b"}]`, want: 2},
		{name: "brackets inside strings", patch: `[{"op":"add","path":"/a","value":"[{\"}]"}]`, want: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := countOps([]byte(tt.patch)); got != tt.want {
				t.Errorf("countOps(%s) = %d, want %d", tt.patch, got, tt.want)
			}
		})
	}
}
