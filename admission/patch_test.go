package admission

import (
	"encoding/json"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
)

func TestPointerEscapes(t *testing.T) {
	tests := []struct {
		name   string
		tokens []string
		want   string
	}{
		{name: "plain", tokens: []string{"spec", "containers"}, want: "/spec/containers"},
		{name: "slash in a key", tokens: []string{"metadata", "annotations", "hookback.dev/cpu"}, want: "/metadata/annotations/hookback.dev~1cpu"},
		{name: "tilde before slash", tokens: []string{"a~/b"}, want: "/a~0~1b"},
		{name: "empty token", tokens: []string{""}, want: "/"},
		{name: "root", want: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Pointer(tc.tokens...); got != tc.want {
				t.Errorf("Pointer(%q) = %q, want %q", tc.tokens, got, tc.want)
			}
		})
	}
}

// TestPatchOpsApply applies the built operations with a real JSON patch
// implementation (the one the apiserver vendors) to documents that carry
// fields no client library knows, and checks that only the intended members
// change.
func TestPatchOpsApply(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		ops  []PatchOp
		want string
	}{
		{
			name: "append to a missing array creates it",
			doc:  `{"spec":{"future":1}}`,
			ops:  AppendOps("/spec/tolerations", false, map[string]string{"key": "a"}, map[string]string{"key": "b"}),
			want: `{"spec":{"future":1,"tolerations":[{"key":"a"},{"key":"b"}]}}`,
		},
		{
			name: "append to a null array replaces the null",
			doc:  `{"spec":{"tolerations":null}}`,
			ops:  AppendOps("/spec/tolerations", false, "x"),
			want: `{"spec":{"tolerations":["x"]}}`,
		},
		{
			name: "append to an existing array keeps its unknown members",
			doc:  `{"spec":{"tolerations":[{"key":"a","futureField":{"deep":true}}]}}`,
			ops:  AppendOps("/spec/tolerations", true, map[string]string{"key": "b"}),
			want: `{"spec":{"tolerations":[{"key":"a","futureField":{"deep":true}},{"key":"b"}]}}`,
		},
		{
			name: "nothing to append",
			doc:  `{"a":1}`,
			ops:  AppendOps[string]("/a", true),
			want: `{"a":1}`,
		},
		{
			name: "set a key in a missing map",
			doc:  `{"metadata":{"name":"n"}}`,
			ops:  []PatchOp{SetKeyOp("/metadata/annotations", false, "x/y~z", "v")},
			want: `{"metadata":{"name":"n","annotations":{"x/y~z":"v"}}}`,
		},
		{
			name: "set a key in an existing map overwrites only that key",
			doc:  `{"metadata":{"annotations":{"x/y":"old","other":"kept"}}}`,
			ops:  []PatchOp{SetKeyOp("/metadata/annotations", true, "x/y", "new")},
			want: `{"metadata":{"annotations":{"x/y":"new","other":"kept"}}}`,
		},
		{
			name: "replace and remove",
			doc:  `{"status":{"allocatable":{"cpu":"4","future.io/gpu":"1"}},"metadata":{"annotations":{"a/b":"1"}}}`,
			ops:  []PatchOp{Replace("/status/allocatable/cpu", "8"), Remove(Pointer("metadata", "annotations", "a/b"))},
			want: `{"status":{"allocatable":{"cpu":"8","future.io/gpu":"1"}},"metadata":{"annotations":{}}}`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.ops)
			if err != nil {
				t.Fatal(err)
			}
			got := []byte(tc.doc)
			if len(tc.ops) > 0 {
				p, err := jsonpatch.DecodePatch(raw)
				if err != nil {
					t.Fatalf("decode %s: %v", raw, err)
				}
				if got, err = p.Apply(got); err != nil {
					t.Fatalf("apply %s: %v", raw, err)
				}
			}
			if !jsonpatch.Equal(got, []byte(tc.want)) {
				t.Errorf("patch %s gave\n%s\nwant\n%s", raw, got, tc.want)
			}
		})
	}
}

func TestPatchOpJSON(t *testing.T) {
	tests := []struct {
		name string
		op   PatchOp
		want string
	}{
		{name: "remove has no value", op: Remove("/a"), want: `{"op":"remove","path":"/a"}`},
		{name: "add of null keeps the value", op: Add("/a", nil), want: `{"op":"add","path":"/a","value":null}`},
		{name: "replace of false keeps the value", op: Replace("/a", false), want: `{"op":"replace","path":"/a","value":false}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.op)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("got %s, want %s", b, tc.want)
			}
		})
	}
}
