package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/internal/jsondiff"
)

// OperationConvert starts the operation of a round-trip row:
// "CONVERT v1->v2->v1".
const OperationConvert = "CONVERT"

// Conversion is one CRD whose conversion webhook the audit round-trips:
// every stored object, to each served version and back.
type Conversion struct {
	// CRD is the CustomResourceDefinition's name.
	CRD       string
	Converter conversion.Converter
	// NamespaceSelector and ObjectSelector narrow the objects (the audit's
	// scope); nil selects everything.
	NamespaceSelector, ObjectSelector *metav1.LabelSelector
}

// CRDInfo is what the round trips need of a CRD as the cluster serves it.
type CRDInfo struct {
	Group, Resource string
	Namespaced      bool
	// Storage is the storage version; Served every served version.
	Storage string
	Served  []string
	// ReviewVersion is the ConversionReview apiVersion sent.
	ReviewVersion string
}

// CRDReader reads CRDs from the cluster.
//
// Contract: CRD returns found false, and no error, when the cluster has no
// CRD of that name.
type CRDReader interface {
	CRD(ctx context.Context, name string) (info CRDInfo, found bool, err error)
}

// trip is one object's round trip through one other served version.
type trip struct {
	conv    *Conversion
	info    CRDInfo
	version string
}

func (t trip) name() string { return "conversion " + t.conv.CRD }

func (t trip) operation() string {
	return fmt.Sprintf("%s %s->%s->%s", OperationConvert, t.info.Storage, t.version, t.info.Storage)
}

// dispatchConversions lists each CRD's stored objects in its storage
// version and queues a round trip per object and other served version.
// What concerns one CRD is a row; the audit goes on.
func dispatchConversions(ctx context.Context, opts Options, c *collector, jobs queue, nsLabels map[string]map[string]string) {
	for i := range opts.Conversions {
		conv := &opts.Conversions[i]
		webhook := "conversion " + conv.CRD
		info, found, err := opts.CRDs.CRD(ctx, conv.CRD)
		switch {
		case err != nil:
			c.add(Result{Webhook: webhook, Resource: conv.CRD, Result: Error, Message: fmt.Sprintf("read the CustomResourceDefinition: %v", err)})
			continue
		case !found:
			opts.Log.Info("no round trips: the CustomResourceDefinition is not in the cluster, so nothing is stored", "crd", conv.CRD)
			continue
		}
		var trips []trip
		for _, v := range info.Served {
			if v != info.Storage {
				trips = append(trips, trip{conv: conv, info: info, version: v})
			}
		}
		if len(trips) == 0 {
			opts.Log.Info("no round trips: the CustomResourceDefinition serves only its storage version", "crd", conv.CRD)
			continue
		}
		gvr := schema.GroupVersionResource{Group: info.Group, Version: info.Storage, Resource: info.Resource}
		err = opts.Lister.List(ctx, gvr, func(obj map[string]any) error {
			name, namespace, own := identity(obj)
			ok, err := selected(conv.ObjectSelector, conv.NamespaceSelector, info.Namespaced, own, nsLabels[namespace])
			if err != nil || !ok {
				return nil
			}
			raw, err := json.Marshal(obj)
			if err != nil {
				return fmt.Errorf("encode %s/%s: %w", namespace, name, err)
			}
			for _, t := range trips {
				if err := jobs.put(ctx, job{trip: &t, raw: raw, namespace: namespace, name: name}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			c.add(Result{Webhook: webhook, Resource: conv.CRD, Result: Error, Message: fmt.Sprintf("list %s in %s: %v", conv.CRD, info.Storage, err)})
		}
	}
}

// roundTrip converts one stored object to the trip's version and back
// through the CRD's converter and reports what the trip lost or changed.
func roundTrip(ctx context.Context, j job) Result {
	t := j.trip
	res := Result{Webhook: t.name(), Resource: t.info.Resource + "." + t.info.Group, Namespace: j.namespace, Name: j.name, Operation: t.operation()}
	there, err := convertOne(ctx, t.conv.Converter, t.info, j.raw, t.version)
	if err == nil {
		var back []byte
		back, err = convertOne(ctx, t.conv.Converter, t.info, there, t.info.Storage)
		if err == nil {
			return compare(res, j.raw, back)
		}
	}
	var refused refusal
	if errors.As(err, &refused) {
		res.Result, res.Message = Failed, string(refused)
	} else {
		res.Result, res.Message = Error, err.Error()
	}
	return res
}

// refusal is a conversion the upstream answered with Failure: its message.
type refusal string

func (r refusal) Error() string { return string(r) }

// convertOne sends one object in a ConversionReview built as the apiserver
// builds one and returns the converted object; the converter checks the
// answer (uid, apiVersion, identity of the objects).
func convertOne(ctx context.Context, c conversion.Converter, info CRDInfo, obj []byte, version string) ([]byte, error) {
	desired := schema.GroupVersion{Group: info.Group, Version: version}.String()
	out, err := conversion.ConvertObjects(ctx, c, info.ReviewVersion, desired, []json.RawMessage{obj})
	var refused *conversion.RefusedError
	switch {
	case errors.As(err, &refused):
		return nil, refusal(fmt.Sprintf("to %s: %s", version, refused.Message))
	case err != nil:
		return nil, fmt.Errorf("to %s: %w", version, err)
	}
	return out[0], nil
}

// compare reads the original and the round-tripped object and fills res.
func compare(res Result, before, after []byte) Result {
	var a, b map[string]any
	if err := json.Unmarshal(before, &a); err != nil {
		res.Result, res.Message = Error, fmt.Sprintf("read the stored object: %v", err)
		return res
	}
	if err := json.Unmarshal(after, &b); err != nil {
		res.Result, res.Message = Error, fmt.Sprintf("read the converted object: %v", err)
		return res
	}
	res.Fields = jsondiff.Fields(a, b)
	if len(res.Fields) == 0 {
		res.Result = Kept
		return res
	}
	res.Result, res.Message = Lost, jsondiff.Text(res.Fields)
	return res
}

// selected says whether an object passes the selectors as the apiserver
// matches a webhook's: the namespace selector only for namespaced objects.
func selected(objSel, nsSel *metav1.LabelSelector, namespaced bool, own, nsSet map[string]string) (bool, error) {
	ok, err := Selects(objSel, own)
	if err == nil && ok && namespaced {
		ok, err = Selects(nsSel, nsSet)
	}
	return ok, err
}
