package conversion

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// DefaultTimeout is how long the apiserver waits on a conversion webhook
// (a CRD's conversion has no timeoutSeconds).
const DefaultTimeout = 30 * time.Second

// RefusedError is a conversion the converter answered with Failure: the
// object cannot be converted, as opposed to a converter that could not be
// asked or answered wrongly.
type RefusedError struct {
	// Desired is the apiVersion asked for; Message the converter's reason.
	Desired, Message string
}

func (e *RefusedError) Error() string { return e.Message }

// ConvertObjects sends objs to c in one ConversionReview of reviewVersion
// (V1 or V1beta1), built as the apiserver builds one, asking for desired
// (group/version), and returns the converted objects in order. The
// converter checks the answer (uid, apiVersion and identity of each
// object). A Failure answer is a *RefusedError; anything else that goes
// wrong is another error. Errors do not name desired: callers do. The call waits at most DefaultTimeout.
func ConvertObjects(ctx context.Context, c Converter, reviewVersion, desired string, objs []json.RawMessage) ([]json.RawMessage, error) {
	body, err := json.Marshal(map[string]any{
		"apiVersion": reviewVersion, "kind": Kind,
		"request": map[string]any{"uid": string(uuid.NewUUID()), "desiredAPIVersion": desired, "objects": objs},
	})
	if err != nil {
		return nil, fmt.Errorf("encode ConversionReview: %w", err)
	}
	req, err := Decode(body)
	if err != nil {
		return nil, fmt.Errorf("read the ConversionReview back: %w", err)
	}
	req.Timeout = DefaultTimeout
	ctx, cancel := context.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	a := c.Convert(ctx, req)
	if a.Failure != "" {
		return nil, errors.New(a.Failure)
	}
	var review struct {
		Response struct {
			Result           Status            `json:"result"`
			ConvertedObjects []json.RawMessage `json:"convertedObjects"`
		} `json:"response"`
	}
	if err := json.Unmarshal(a.Body, &review); err != nil {
		return nil, fmt.Errorf("read the answer: %w", err)
	}
	r := review.Response
	if r.Result.Status != "Success" {
		return nil, &RefusedError{Desired: desired, Message: r.Result.Message}
	}
	if len(r.ConvertedObjects) != len(objs) {
		return nil, fmt.Errorf("%d objects converted of %d sent", len(r.ConvertedObjects), len(objs))
	}
	return r.ConvertedObjects, nil
}

// IsRefused says whether err is, or wraps, a *RefusedError.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}
