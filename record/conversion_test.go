package record

import (
	"reflect"
	"testing"
)

func TestCompareConversion(t *testing.T) {
	ans := func(status, msg, objs string) []byte {
		return []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","response":{"uid":"u","result":{"status":"` + status + `","message":"` + msg + `"},"convertedObjects":[` + objs + `]}}`)
	}
	const a, b = `{"apiVersion":"x/v2","spec":{"count":1}}`, `{"apiVersion":"x/v2","spec":{"count":2}}`
	tests := []struct {
		name      string
		rec, now  []byte
		wantDiffs []string
	}{
		{name: "same", rec: ans("Success", "", a+","+b), now: ans("Success", "", a+","+b)},
		{name: "object differs", rec: ans("Success", "", a+","+b), now: ans("Success", "", a+","+a), wantDiffs: []string{"converted object 2 differs"}},
		{name: "count differs", rec: ans("Success", "", a+","+b), now: ans("Success", "", a), wantDiffs: []string{"converted objects 2 -> 1"}},
		{name: "now fails", rec: ans("Success", "", a), now: ans("Failure", "boom", ""),
			wantDiffs: []string{"result Success -> Failure", `message "" -> "boom"`, "converted objects 1 -> 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diffs, err := Compare(tt.rec, tt.now)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(diffs, tt.wantDiffs) {
				t.Errorf("diffs %q, want %q", diffs, tt.wantDiffs)
			}
		})
	}
}
