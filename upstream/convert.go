package upstream

import (
	"context"
	"fmt"
	"time"

	"github.com/hookback/hookback/conversion"
)

// Converter forwards ConversionReviews, exactly as received, to the
// upstream and checks each answer before the apiserver sees it.
type Converter struct {
	f *Forwarder
}

var _ conversion.Converter = (*Converter)(nil)

// NewConverter forwards to opts.Base + path (/convert for controller-runtime).
func NewConverter(opts Options, path string) (*Converter, error) {
	f, err := New(opts, path)
	if err != nil {
		return nil, err
	}
	return &Converter{f: f}, nil
}

// Convert implements conversion.Converter. Conversion has no
// failurePolicy: whatever goes wrong becomes a Failure whose message says
// what the upstream did, which the apiserver shows to the client.
func (c *Converter) Convert(ctx context.Context, req conversion.Request) conversion.Answer {
	start := time.Now()
	answer, err := c.f.post(ctx, c.f.url(req.Timeout), req.Raw)
	took := time.Since(start)
	if err == nil {
		err = CheckConversion(req, answer)
		if err != nil {
			c.f.opts.Log.Warn("upstream answered a conversion wrongly", "upstream", c.f.target, "error", err)
		}
	} else {
		c.f.opts.Log.Warn("upstream conversion failed", "upstream", c.f.target, "error", err)
	}
	if err != nil {
		return conversion.Answer{Failure: "hookback: " + err.Error(), Upstream: took}
	}
	return conversion.Answer{Body: answer, Upstream: took}
}

// CheckConversion says what is wrong with an upstream's answer to req: it
// must be a ConversionReview of the asked version with the same uid, a
// result Success or Failure (with a message), and on Success as many
// converted objects as sent, in order, each of the desired apiVersion with
// the uid, name and namespace of its input.
func CheckConversion(req conversion.Request, answer []byte) error {
	a, err := conversion.DecodeAnswer(answer)
	if err != nil {
		return fmt.Errorf("upstream answer is not a ConversionReview: %w (answer: %s)", err, snippet(answer))
	}
	switch {
	case a.Kind != conversion.Kind:
		return fmt.Errorf("upstream answer is not a ConversionReview: kind %q", a.Kind)
	case a.APIVersion != req.ReviewVersion:
		return fmt.Errorf("upstream answered %s to a %s review", a.APIVersion, req.ReviewVersion)
	case a.Response == nil:
		return fmt.Errorf("upstream answer has no response")
	case a.Response.UID != req.UID:
		return fmt.Errorf("upstream answered uid %q for request %q", a.Response.UID, req.UID)
	}
	res := a.Response.Result
	switch res.Status {
	case "Success":
	case "Failure":
		if res.Message == "" {
			return fmt.Errorf("upstream answered Failure without a message: say why the conversion failed")
		}
		return nil
	default:
		return fmt.Errorf("upstream answered result status %q: want Success or Failure", res.Status)
	}
	got := a.Response.ConvertedObjects
	if len(got) != len(req.Objects) {
		return fmt.Errorf("upstream converted %d objects of %d sent", len(got), len(req.Objects))
	}
	for i, out := range got {
		in := req.Objects[i]
		switch {
		case out.APIVersion != req.DesiredAPIVersion:
			return fmt.Errorf("upstream converted object %d (%s) to apiVersion %q, want %q", i+1, in.Ref(), out.APIVersion, req.DesiredAPIVersion)
		case out.Metadata.UID != in.Metadata.UID:
			return fmt.Errorf("upstream changed the uid of object %d (%s) from %q to %q", i+1, in.Ref(), in.Metadata.UID, out.Metadata.UID)
		case out.Metadata.Name != in.Metadata.Name:
			return fmt.Errorf("upstream changed the name of object %d from %q to %q", i+1, in.Metadata.Name, out.Metadata.Name)
		case out.Metadata.Namespace != in.Metadata.Namespace:
			return fmt.Errorf("upstream changed the namespace of object %d (%s) to %q", i+1, in.Ref(), out.Metadata.Namespace)
		}
	}
	return nil
}
