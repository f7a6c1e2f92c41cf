package roundtrip

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/audit"
	"github.com/hookback/hookback/conversion"
)

// Case is a conversion case of a suite: an object, and the object expected
// once the conversion webhook has converted it.
type Case struct {
	// Name says what the case checks.
	Name       string         `json:"name"`
	Conversion ConversionCase `json:"conversion"`
}

// ConversionCase is an object in one version and the object expected in
// another: with DesiredAPIVersion, the conversion of Object to it; with
// Via, the round trip of Object to Via and back, Expected then being in
// Object's version (for a case the fuzzer writes, Object itself: a round
// trip must lose nothing). Only what audit.Diff compares is compared:
// every field but apiVersion, kind and metadata, and the labels and
// annotations.
type ConversionCase struct {
	// CRD names the CustomResourceDefinition whose webhook converts.
	CRD               string         `json:"crd"`
	Object            map[string]any `json:"object"`
	DesiredAPIVersion string         `json:"desiredAPIVersion,omitempty"`
	Via               string         `json:"via,omitempty"`
	Expected          map[string]any `json:"expected"`
}

// Validate says what is wrong with a case.
func (c ConversionCase) Validate() error {
	var errs []error
	if c.CRD == "" {
		errs = append(errs, errors.New("conversion.crd: name the CustomResourceDefinition"))
	}
	if c.Object == nil || c.Expected == nil {
		errs = append(errs, errors.New("conversion.object and conversion.expected are both needed"))
	}
	if (c.DesiredAPIVersion == "") == (c.Via == "") {
		errs = append(errs, errors.New("conversion: give exactly one of desiredAPIVersion (a conversion) and via (a round trip)"))
	}
	return errors.Join(errs...)
}

// Check runs a case through c and returns what differs from Expected;
// none means it passes. Its error is for a conversion that did not happen
// (a *conversion.RefusedError when the webhook answered Failure).
func (cc ConversionCase) Check(ctx context.Context, c conversion.Converter, reviewVersion string) ([]audit.FieldChange, error) {
	if err := cc.Validate(); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(cc.Object)
	if err != nil {
		return nil, fmt.Errorf("encode the case's object: %w", err)
	}
	steps := []string{cc.DesiredAPIVersion}
	if cc.Via != "" {
		steps = []string{cc.Via, fmt.Sprint(cc.Object["apiVersion"])}
	}
	for _, to := range steps {
		out, err := conversion.ConvertObjects(ctx, c, reviewVersion, to, []json.RawMessage{raw})
		if err != nil {
			return nil, fmt.Errorf("convert to %s: %w", to, err)
		}
		raw = out[0]
	}
	var got map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		return nil, fmt.Errorf("read the converted object: %w", err)
	}
	return audit.Diff(deepCopy(cc.Expected), got), nil
}

// LossCase is the case that reproduces l: its minimal object, round-tripped
// through l.Via, expected back unchanged.
func LossCase(crd, group string, l Loss) Case {
	return Case{
		Name:       fmt.Sprintf("%s %s->%s->%s keeps %s", crd, l.From, l.Via, l.From, l.Path),
		Conversion: ConversionCase{CRD: crd, Object: l.Object, Via: group + "/" + l.Via, Expected: l.Object},
	}
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// WriteCases writes one file per loss of rep into dir (made if missing):
// convert-CRD-FROM-VIA-PATH.yaml, each headed by a comment with the seed
// and what was lost, and returns the files written.
func WriteCases(dir string, rep Report, group string) ([]string, error) {
	if len(rep.Losses) == 0 {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("make the suite directory: %w", err)
	}
	var files []string
	for _, l := range rep.Losses {
		body, err := yaml.Marshal(LossCase(rep.CRD, group, l))
		if err != nil {
			return files, fmt.Errorf("encode the case of %s: %w", l.Path, err)
		}
		head := fmt.Sprintf("# Written by hookback's conversion fuzzer (--seed %d): the round trip %s -> %s -> %s\n# of this object loses %s (%s -> %s).\n",
			rep.Seed, l.From, l.Via, l.From, l.Path, l.Before, l.After)
		base := strings.Trim(unsafeName.ReplaceAllString(strings.Join([]string{"convert", rep.CRD, l.From, l.Via, l.Path}, "-"), "_"), "_")
		path := filepath.Join(dir, base+".yaml")
		if err := os.WriteFile(path, append([]byte(head), body...), 0o644); err != nil {
			return files, fmt.Errorf("write case: %w", err)
		}
		files = append(files, path)
	}
	return files, nil
}

// ReadCase reads a case file WriteCases wrote (or one written by hand in
// the same shape), strictly: an unknown field is an error naming it.
func ReadCase(path string) (Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Case{}, fmt.Errorf("read case: %w", err)
	}
	var c Case
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return Case{}, fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Conversion.Validate(); err != nil {
		return Case{}, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}
