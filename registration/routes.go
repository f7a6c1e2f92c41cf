package registration

import (
	"net/url"
	"strconv"
	"strings"
)

// UpstreamPathOf is the original target path of a route path (see Route):
// what `hookback replay --upstream` sends a recorded review to. Any other
// path is returned as it is.
func UpstreamPathOf(routePath string) string {
	for _, prefix := range []string{"/upstream/svc/", "/upstream/url/"} {
		if rest, ok := strings.CutPrefix(routePath, prefix); ok {
			// svc: NS/NAME/PORT/path; url: HOST/PORT/path.
			skip := 3
			if prefix == "/upstream/url/" {
				skip = 2
			}
			parts := strings.SplitN(rest, "/", skip+1)
			if len(parts) <= skip {
				return "/"
			}
			return "/" + parts[skip]
		}
	}
	return routePath
}

// ServiceOf is the Service a route path stands for (see Route), false
// for a url target or a path that is no route's: what `hookback test`
// reads from a recorded path to pick the upstream mapped to that Service
// (--upstream NAMESPACE/SERVICE=URL) with no manifests at hand.
func ServiceOf(routePath string) (ServiceRef, bool) {
	rest, ok := strings.CutPrefix(routePath, RoutePrefixService)
	if !ok {
		return ServiceRef{}, false
	}
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) < 3 {
		return ServiceRef{}, false
	}
	ns, err1 := url.PathUnescape(parts[0])
	name, err2 := url.PathUnescape(parts[1])
	port, err3 := strconv.ParseInt(parts[2], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || ns == "" || name == "" {
		return ServiceRef{}, false
	}
	path := "/"
	if len(parts) == 4 {
		if p, err := url.PathUnescape("/" + parts[3]); err == nil {
			path = p
		}
	}
	return ServiceRef{Namespace: ns, Name: name, Port: int32(port), Path: path}, true
}

// Route path prefixes. A route path encodes the whole in-cluster target, so
// that two services serving the same path get different routes, and stays
// readable in logs:
//
//	service target: /upstream/svc/NAMESPACE/NAME/PORT/PATH
//	url target:     /upstream/url/HOST/PORT/PATH
//
// PORT is always explicit (443 when the manifest leaves it out) and PATH is
// the target's path, "/" when absent, so /upstream/svc/system/webhook-service/443/
// stands for the service's root. Segments are path-escaped.
const (
	RoutePrefixService = "/upstream/svc/"
	RoutePrefixURL     = "/upstream/url/"
)

// Route is one path hookback serves for the user's webhooks, and the
// in-cluster target it stands for.
type Route struct {
	// Path is hookback's path, unique per distinct target (see RoutePrefixService).
	Path string
	// Service is the target service, or nil for a url target.
	Service *ServiceRef
	// URL is the original clientConfig.url, for url targets; when several
	// spellings name one target (https://h/x, https://h:443/x), the first.
	URL string
	// UpstreamPath is the escaped path of the original target, used when
	// forwarding. It never has a query: the apiserver refuses query
	// parameters in webhook URLs, and so does manifests.Rewrite.
	UpstreamPath string
	// Webhooks names the webhooks routed here, for logs.
	Webhooks []string
}

// ServiceRef is a clientConfig.service target, port and path defaulted.
type ServiceRef struct {
	Namespace, Name string
	// Port is 443 when the manifest leaves it out.
	Port int32
	// Path is "/" when the manifest leaves it out.
	Path string
}

// Key is "NAMESPACE/NAME", what `--upstream NAMESPACE/SERVICE=URL` maps.
func (s ServiceRef) Key() string { return s.Namespace + "/" + s.Name }
