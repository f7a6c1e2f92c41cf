package record

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// conversionAnswer is what compareConversion looks at in a
// ConversionReview answer.
type conversionAnswer struct {
	Kind     string `json:"kind"`
	Response struct {
		Result struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"result"`
		ConvertedObjects []any `json:"convertedObjects"`
	} `json:"response"`
}

// isConversion reports an answer to a ConversionReview.
func isConversion(answer []byte) bool {
	return bytes.Contains(answer, []byte(`"ConversionReview"`))
}

// compareConversion lists the differences between a recorded and a new
// ConversionReview answer: result, message, and each converted object (as
// JSON values; their order is significant, as for the apiserver).
func compareConversion(recorded, now []byte) ([]string, error) {
	var a, b conversionAnswer
	if err := json.Unmarshal(recorded, &a); err != nil {
		return nil, fmt.Errorf("decode recorded answer: %w", err)
	}
	if err := json.Unmarshal(now, &b); err != nil {
		return nil, fmt.Errorf("decode new answer: %w", err)
	}
	ra, rb := a.Response, b.Response
	var diffs []string
	if ra.Result.Status != rb.Result.Status {
		diffs = append(diffs, fmt.Sprintf("result %s -> %s", ra.Result.Status, rb.Result.Status))
	}
	if ra.Result.Message != rb.Result.Message {
		diffs = append(diffs, fmt.Sprintf("message %q -> %q", ra.Result.Message, rb.Result.Message))
	}
	if len(ra.ConvertedObjects) != len(rb.ConvertedObjects) {
		return append(diffs, fmt.Sprintf("converted objects %d -> %d", len(ra.ConvertedObjects), len(rb.ConvertedObjects))), nil
	}
	for i := range ra.ConvertedObjects {
		if !reflect.DeepEqual(ra.ConvertedObjects[i], rb.ConvertedObjects[i]) {
			// The objects are not shown: they may hold what a log must not.
			diffs = append(diffs, fmt.Sprintf("converted object %d differs", i+1))
		}
	}
	return diffs, nil
}
