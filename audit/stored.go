package audit

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// storedConversion is how the objects of a webhook's target are read
// when the target is a custom resource in a version other than its
// storage version, and the audit has the CRD's conversion webhook: listed
// in the storage version, each object converted to the target's version
// through the webhook, one at a time. A list in the target's version
// would have the apiserver convert them all, and fail as a whole on the
// first object that does not convert: no object of that resource would
// be audited.
type storedConversion struct {
	conv    *Conversion
	info    CRDInfo
	version string
}

// storage is the resource in its storage version, which is listed.
func (s *storedConversion) storage() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: s.info.Group, Version: s.info.Storage, Resource: s.info.Resource}
}

// storedConversions finds, among the resources to list, those to list in
// their storage version. A CRD that cannot be read keeps the list in the
// target's version (logged): the audit goes on as it did.
func storedConversions(ctx context.Context, opts Options, order []schema.GroupVersionResource) map[schema.GroupVersionResource]*storedConversion {
	out := map[schema.GroupVersionResource]*storedConversion{}
	if opts.CRDs == nil {
		return out
	}
	for _, gvr := range order {
		for i := range opts.Conversions {
			conv := &opts.Conversions[i]
			if conv.CRD != gvr.Resource+"."+gvr.Group {
				continue
			}
			info, found, err := opts.CRDs.CRD(ctx, conv.CRD)
			if err != nil || !found || info.Storage == "" || info.Storage == gvr.Version {
				if err != nil {
					opts.Log.Warn("the CustomResourceDefinition could not be read: its objects are listed in the webhook's version", "crd", conv.CRD, "error", err)
				}
				continue
			}
			out[gvr] = &storedConversion{conv: conv, info: info, version: gvr.Version}
		}
	}
	return out
}

// convertStored converts a job's stored object to the version its
// webhook registered for. A conversion the webhook refuses is a finding
// of its own, Unconvertible: in the cluster, any write of that object
// through this webhook's version fails the same way. A converter that
// cannot be asked or answers wrongly is an Error of that object.
func convertStored(ctx context.Context, j job) ([]byte, *Result) {
	s := j.stored
	out, err := convertOne(ctx, s.conv.Converter, s.info, j.raw, s.version)
	if err == nil {
		return out, nil
	}
	res := Result{Webhook: j.hook.Name, Resource: j.target.Resource(), Namespace: j.namespace, Name: j.name, Operation: string(j.target.Operation)}
	var refused refusal
	if errors.As(err, &refused) {
		res.Result = Unconvertible
		res.Message = fmt.Sprintf("stored in %s, it cannot be converted to %s, the version this webhook registered for: %s (in the cluster, an update of it fails the same way)",
			s.info.Storage, s.version, trimTo(string(refused), s.version))
		return nil, &res
	}
	res.Result, res.Message = Error, fmt.Sprintf("convert from %s: %v", s.info.Storage, err)
	return nil, &res
}

// trimTo drops convertOne's "to VERSION: " from a refusal's message.
func trimTo(msg, version string) string {
	prefix := "to " + version + ": "
	if len(msg) > len(prefix) && msg[:len(prefix)] == prefix {
		return msg[len(prefix):]
	}
	return msg
}
