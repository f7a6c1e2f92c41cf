package inspector

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/hookback/hookback/record"
)

// patchOp is one JSON patch operation as the page shows it.
type patchOp struct {
	Op, Path, From, Value string
}

// detail is the page of one review.
type detail struct {
	Row       row
	Summary   *summary
	Object    string
	OldObject string
	Answer    string
	Ops       []patchOp
	Diff      []diffLine
	DiffError string
	Events    []Event
	Redacted  bool
	Filter    string
	CanReplay bool
	kept      bool // the review's body is kept
	// Shadow is the comparison with the deployed webhook (start
	// --shadow); nil without one.
	Shadow *shadowDetail
	// Chain is the admission chain view (start --chain); nil without.
	Chain *chainDetail
	// Policy is start --policy's evaluation, or comparison with the
	// policies; nil without.
	Policy *policyDetail
	// Conversions are the objects of a ConversionReview before and after,
	// the first maxConversionDiffs; MoreConverted counts the others.
	Conversions   []objectDiff
	MoreConverted int
}

// detailOf parses e for its page.
func detailOf(e *entry, source string) detail {
	d := detail{Row: rowOf(e, source), Summary: e.summary(), Events: e.events, Shadow: shadowDetailOf(e), Chain: chainDetailOf(e), Policy: policyDetailOf(e)}
	review, answer := e.bodies()
	d.kept = review != nil
	d.Redacted = bytes.Contains(review, []byte(record.Redacted))
	var rv reviewDoc
	if json.Unmarshal(review, &rv) == nil {
		d.Object, d.OldObject = pretty(rv.Request.Object), pretty(rv.Request.OldObject)
	}
	d.Answer = pretty(answer)
	if isConversion(review) {
		d.Conversions, d.MoreConverted = conversionDiffs(review, answer)
		return d
	}
	if len(d.Summary.Patch) == 0 {
		return d
	}
	var err error
	if d.Ops, err = opsOf(d.Summary.Patch); err != nil {
		d.DiffError = err.Error()
		return d
	}
	after, err := applyPatch(rv.Request.Object, d.Summary.Patch)
	if err != nil {
		d.DiffError = err.Error()
		return d
	}
	d.Diff = fold(sideBySide(d.Object, pretty(after)))
	return d
}

// pretty indents JSON (keys sorted, so before and after compare line by
// line); empty or JSON null gives "".
func pretty(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return buf.String()
}

func opsOf(patch []byte) ([]patchOp, error) {
	var raw []struct {
		Op, Path, From string
		Value          json.RawMessage
	}
	if err := json.Unmarshal(patch, &raw); err != nil {
		return nil, fmt.Errorf("decode patch: %w", err)
	}
	out := make([]patchOp, len(raw))
	for i, r := range raw {
		out[i] = patchOp{Op: r.Op, Path: r.Path, From: r.From, Value: compact(r.Value)}
	}
	return out, nil
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return string(raw)
	}
	return buf.String()
}

// applyPatch is the object after the patch, as the apiserver would store it
// (before its own defaulting).
func applyPatch(object, patch []byte) ([]byte, error) {
	if len(object) == 0 {
		return nil, fmt.Errorf("the request carries no object to patch")
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("decode patch: %w", err)
	}
	out, err := p.Apply(object)
	if err != nil {
		return nil, fmt.Errorf("apply patch: %w", err)
	}
	return out, nil
}

// shadowDetail is the comparison with the deployed webhook, in full.
type shadowDetail struct {
	State                     string
	Deployed, DeployedFailure string
	Differences               []string
	// Yours: the page shows your webhook's answer, not hookback's.
	Yours bool
}

// shadowDetailOf is e's comparison; nil when none is made for it.
func shadowDetailOf(e *entry) *shadowDetail {
	state, _, o := e.shadowOf()
	if state == "" || state == shadowNone {
		return nil
	}
	d := &shadowDetail{State: state}
	if o != nil {
		d.Deployed, d.DeployedFailure, d.Differences, d.Yours = o.deployed, o.deployedFailure, o.differences, o.yours
	}
	return d
}
