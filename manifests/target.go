package manifests

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hookback/hookback/registration"
)

// hookTarget reads a webhook's clientConfig into the Route standing for it
// (without Webhooks).
func hookTarget(hm map[string]any) (registration.Route, error) {
	cc, ok := hm["clientConfig"].(map[string]any)
	if !ok {
		return registration.Route{}, errors.New("no clientConfig: it needs a service or a url to forward to")
	}
	svc, hasService := cc["service"].(map[string]any)
	raw, _ := cc["url"].(string)
	switch {
	case hasService && raw != "":
		return registration.Route{}, errors.New("clientConfig has both service and url: the apiserver allows only one")
	case hasService:
		return serviceTarget(svc)
	case raw != "":
		return urlTarget(raw)
	default:
		return registration.Route{}, errors.New("clientConfig has neither service nor url: nothing to forward to")
	}
}

func serviceTarget(svc map[string]any) (registration.Route, error) {
	ns, _ := svc["namespace"].(string)
	name, _ := svc["name"].(string)
	if ns == "" || name == "" {
		return registration.Route{}, errors.New("clientConfig.service needs a namespace and a name")
	}
	port := int64(443)
	if v, ok := svc["port"]; ok && v != nil {
		p, isInt := intValue(v)
		if !isInt || p < 1 || p > 65535 {
			return registration.Route{}, fmt.Errorf("clientConfig.service.port %v is not a port number", v)
		}
		port = p
	}
	path := "/"
	if v, ok := svc["path"]; ok && v != nil {
		p, isString := v.(string)
		if !isString || (p != "" && !strings.HasPrefix(p, "/")) {
			return registration.Route{}, fmt.Errorf("clientConfig.service.path %v does not start with /", v)
		}
		if p != "" {
			path = p
		}
	}
	upstream := escapePath(path)
	return registration.Route{
		Path: registration.RoutePrefixService + url.PathEscape(ns) + "/" + url.PathEscape(name) + "/" + portString(port) + upstream,
		Service: &registration.ServiceRef{
			Namespace: ns, Name: name, Port: int32(port), Path: path,
		},
		UpstreamPath: upstream,
	}, nil
}

// urlTarget refuses what the apiserver would refuse in a webhook URL, so
// that a target is its host, port and path alone.
func urlTarget(raw string) (registration.Route, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return registration.Route{}, fmt.Errorf("clientConfig.url %q does not parse: %w", raw, err)
	}
	switch {
	case u.Scheme != "https":
		return registration.Route{}, fmt.Errorf("clientConfig.url %q is not an https URL", raw)
	case u.Hostname() == "":
		return registration.Route{}, fmt.Errorf("clientConfig.url %q has no host", raw)
	case u.User != nil:
		return registration.Route{}, fmt.Errorf("clientConfig.url %q has user information, which the apiserver does not allow", raw)
	case u.RawQuery != "" || u.ForceQuery:
		return registration.Route{}, fmt.Errorf("clientConfig.url %q has a query, which the apiserver does not allow", raw)
	case u.Fragment != "":
		return registration.Route{}, fmt.Errorf("clientConfig.url %q has a fragment, which the apiserver does not allow", raw)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	upstream := u.EscapedPath()
	if upstream == "" {
		upstream = "/"
	}
	host := strings.ToLower(u.Hostname())
	return registration.Route{
		Path:         registration.RoutePrefixURL + url.PathEscape(host) + "/" + port + upstream,
		URL:          raw,
		UpstreamPath: upstream,
	}, nil
}
