package inspector

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// DecisionConverted is a ConversionReview answered with Success.
const DecisionConverted = "converted"

// conversionDoc is what the inspector reads of a ConversionReview, request
// and answer.
type conversionDoc struct {
	Kind    string `json:"kind"`
	Request struct {
		UID               string            `json:"uid"`
		DesiredAPIVersion string            `json:"desiredAPIVersion"`
		Objects           []json.RawMessage `json:"objects"`
	} `json:"request"`
	Response struct {
		Result struct {
			Status  string `json:"status"`
			Message string `json:"message"`
		} `json:"result"`
		ConvertedObjects []json.RawMessage `json:"convertedObjects"`
	} `json:"response"`
}

// isConversion tells a ConversionReview from an AdmissionReview.
func isConversion(review []byte) bool {
	return bytes.Contains(review, []byte(`"ConversionReview"`))
}

type objectMeta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name, Namespace string
	} `json:"metadata"`
}

// readConversion fills the list's columns: CONVERT, to which version, and
// the object (or how many).
func (s *summary) readConversion(b []byte) error {
	var d conversionDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("decode review: %w", err)
	}
	q := d.Request
	s.UID, s.Operation, s.Resource = q.UID, "CONVERT", "to "+q.DesiredAPIVersion
	if len(q.Objects) == 0 {
		return nil
	}
	var m objectMeta
	_ = json.Unmarshal(q.Objects[0], &m)
	s.Kind, s.Namespace, s.Name = m.Kind, m.Metadata.Namespace, m.Metadata.Name
	if len(q.Objects) > 1 {
		s.Name = fmt.Sprintf("%s and %d more", s.Name, len(q.Objects)-1)
	}
	return nil
}

func (s *summary) readConversionAnswer(b []byte) error {
	var d conversionDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	r := d.Response.Result
	s.Message = r.Message
	if r.Status == "Success" {
		s.Decision = DecisionConverted
		return nil
	}
	s.Decision = DecisionErrored
	return nil
}

// maxConversionDiffs bounds the objects a review's page compares: a list
// of thousands converts in one review.
const maxConversionDiffs = 20

// objectDiff is one object before and after its conversion.
type objectDiff struct {
	Name string
	Diff []diffLine
}

// conversionDiffs pairs each object sent with the one converted, in order.
func conversionDiffs(review, answer []byte) (diffs []objectDiff, more int) {
	var q, a conversionDoc
	if json.Unmarshal(review, &q) != nil || json.Unmarshal(answer, &a) != nil {
		return nil, 0
	}
	in, out := q.Request.Objects, a.Response.ConvertedObjects
	n := min(len(in), len(out))
	for i := 0; i < n && i < maxConversionDiffs; i++ {
		var m objectMeta
		_ = json.Unmarshal(in[i], &m)
		name := m.Metadata.Name
		if m.Metadata.Namespace != "" {
			name = m.Metadata.Namespace + "/" + name
		}
		diffs = append(diffs, objectDiff{Name: name, Diff: fold(sideBySide(pretty(in[i]), pretty(out[i])))})
	}
	return diffs, n - len(diffs)
}
