package suite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/hookback/hookback/conversion"
)

// ConversionWebhook is a CRD's conversion webhook a conversion case is
// sent to.
type ConversionWebhook struct {
	// CRD is the CustomResourceDefinition's name, plural.group.
	CRD       string
	Converter conversion.Converter
}

// conversionCase builds the ConversionReview of a conversion case.
func conversionCase(l *Loaded) (*input, error) {
	cv := l.Case.Conversion
	obj, err := objectOf(l, cv.Object, cv.ObjectFile)
	if err != nil {
		return nil, err
	}
	review, err := json.Marshal(map[string]any{
		"apiVersion": conversion.V1, "kind": conversion.Kind,
		"request": map[string]any{"uid": string(uuid.NewUUID()), "desiredAPIVersion": cv.DesiredAPIVersion, "objects": []json.RawMessage{obj}},
	})
	if err != nil {
		return nil, err
	}
	return &input{conversion: &conversionInput{crd: cv.CRD, review: review, group: groupOf(cv.DesiredAPIVersion), via: cv.Via, object: obj}}, nil
}

func groupOf(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// reviewGroup is the group of a ConversionReview's desired version.
func reviewGroup(review []byte) string {
	var r struct {
		Request struct {
			DesiredAPIVersion string `json:"desiredAPIVersion"`
		} `json:"request"`
	}
	_ = json.Unmarshal(review, &r)
	return groupOf(r.Request.DesiredAPIVersion)
}

// pickConversion finds the conversion webhook of a case: named, else the
// CRD of the object's group, else the only one.
func pickConversion(in *conversionInput, hooks []ConversionWebhook) (ConversionWebhook, error) {
	var names []string
	for _, h := range hooks {
		names = append(names, h.CRD)
		if in.crd != "" && h.CRD == in.crd {
			return h, nil
		}
	}
	if in.crd == "" {
		var match []ConversionWebhook
		for _, h := range hooks {
			if strings.HasSuffix(h.CRD, "."+in.group) {
				match = append(match, h)
			}
		}
		if len(match) == 1 {
			return match[0], nil
		}
		if len(hooks) == 1 {
			return hooks[0], nil
		}
	}
	if len(names) == 0 {
		return ConversionWebhook{}, errors.New("no CRD with a conversion webhook among the manifests (your own, or the project's config)")
	}
	return ConversionWebhook{}, fmt.Errorf("conversion.crd %q: want one of %s", in.crd, strings.Join(names, ", "))
}

// convert sends the review and reads the answer's outcome.
func convert(ctx context.Context, h ConversionWebhook, review []byte) (Outcome, error) {
	req, err := conversion.Decode(review)
	if err != nil {
		return Outcome{}, fmt.Errorf("the case's ConversionReview: %w", err)
	}
	ans := h.Converter.Convert(ctx, req)
	if ans.Failure != "" {
		return Outcome{Result: Failed, Message: ans.Failure}, nil
	}
	return conversionOutcome(ans.Body)
}

// conversionOutcome reads a ConversionReview answer.
func conversionOutcome(body []byte) (Outcome, error) {
	var r struct {
		Response struct {
			Result           conversion.Status `json:"result"`
			ConvertedObjects []json.RawMessage `json:"convertedObjects"`
		} `json:"response"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Outcome{}, fmt.Errorf("decode the ConversionReview answer: %w", err)
	}
	res := r.Response
	if res.Result.Status != "Success" {
		return Outcome{Result: Failed, Message: res.Result.Message}, nil
	}
	o := Outcome{Result: Converted, Message: res.Result.Message}
	if len(res.ConvertedObjects) > 0 {
		o.Object = res.ConvertedObjects[0]
	}
	return o, nil
}
