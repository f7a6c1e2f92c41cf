package jsondiff

import (
	"strings"
	"testing"
)

func TestFields(t *testing.T) {
	tests := []struct {
		name          string
		before, after map[string]any
		want          string
	}{
		{name: "owned metadata is ignored",
			before: map[string]any{"metadata": map[string]any{"resourceVersion": "1", "generation": 1.0, "managedFields": []any{"x"}}, "spec": map[string]any{"a": 1.0}},
			after:  map[string]any{"metadata": map[string]any{}, "spec": map[string]any{"a": 1.0}}},
		{name: "a changed value and a lost label",
			before: map[string]any{"metadata": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "w"}}, "spec": map[string]any{"a": 1.0}},
			after:  map[string]any{"metadata": map[string]any{}, "spec": map[string]any{"a": 2.0}},
			want:   `metadata.labels["app.kubernetes.io/name"]: "w" -> <missing>; spec.a: 1 -> 2`},
		{name: "list items and an added status",
			before: map[string]any{"spec": map[string]any{"items": []any{"x", "y"}}},
			after:  map[string]any{"spec": map[string]any{"items": []any{"x"}}, "status": map[string]any{"ok": true}},
			want:   `spec.items[1]: "y" -> <missing>; status: <missing> -> {"ok":true}`},
		{name: "bookkeeping annotations added by the converter are ignored",
			before: map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "1"}}},
			after:  map[string]any{"metadata": map[string]any{"annotations": map[string]any{"a": "1", "example.com/conversion-data": "{}"}}}},
		{name: "long values are cut",
			before: map[string]any{"spec": map[string]any{"text": strings.Repeat("x", 100)}},
			after:  map[string]any{"spec": map[string]any{}},
			want:   `spec.text: "` + strings.Repeat("x", 38) + `… -> <missing>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Text(Fields(tt.before, tt.after)); got != tt.want {
				t.Errorf("Fields:\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
