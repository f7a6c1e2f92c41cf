package main

import (
	"fmt"
	"strings"
)

// An HTTPRoute-sized CRD, made here rather than copied: gateway-api's
// HTTPRoute schema is about 400 KB of JSON, most of it descriptions, with
// lists bounded by maxItems and CEL rules on matches, filters and
// backendRefs. This one has the same shape and size.

const group = "bench.hookback.dev"

// prose is description text, as the generated schemas carry on every
// field.
func prose(field string, n int) string {
	return strings.Repeat(field+" is described here at length, as generated API references describe every field. ", n)
}

func str(desc string, maxLen int) map[string]any {
	return map[string]any{"type": "string", "maxLength": int64(maxLen), "description": prose(desc, 32)}
}

func enum(desc string, values ...string) map[string]any {
	vs := make([]any, len(values))
	for i, v := range values {
		vs[i] = v
	}
	return map[string]any{"type": "string", "enum": vs, "description": prose(desc, 32)}
}

func obj(desc string, props map[string]any, rules ...map[string]any) map[string]any {
	o := map[string]any{"type": "object", "properties": props, "description": prose(desc, 42)}
	if len(rules) > 0 {
		rs := make([]any, len(rules))
		for i, r := range rules {
			rs[i] = r
		}
		o["x-kubernetes-validations"] = rs
	}
	return o
}

func list(desc string, max int, items map[string]any, keys ...string) map[string]any {
	l := map[string]any{"type": "array", "maxItems": int64(max), "items": items, "description": prose(desc, 32)}
	if len(keys) > 0 {
		ks := make([]any, len(keys))
		for i, k := range keys {
			ks[i] = k
		}
		l["x-kubernetes-list-type"], l["x-kubernetes-list-map-keys"] = "map", ks
		items["required"] = ks
	}
	return l
}

func rule(expr, msg string) map[string]any { return map[string]any{"rule": expr, "message": msg} }

func headerMatch(name string) map[string]any {
	return obj(name, map[string]any{
		"name": str(name+" name", 256), "value": str(name+" value", 4096), "type": enum(name+" type", "Exact", "RegularExpression"),
	})
}

func filter(i int) map[string]any {
	mod := func(n string) map[string]any {
		return obj(n, map[string]any{
			"set": list(n+" set", 16, headerMatch(n+" set header"), "name"), "add": list(n+" add", 16, headerMatch(n+" add header"), "name"),
			"remove": list(n+" remove", 16, str(n+" removed header", 256)),
		})
	}
	return obj(fmt.Sprintf("filter %d", i), map[string]any{
		"type":                   enum("filter type", "RequestHeaderModifier", "ResponseHeaderModifier", "RequestRedirect", "URLRewrite", "RequestMirror"),
		"requestHeaderModifier":  mod("request header modifier"),
		"responseHeaderModifier": mod("response header modifier"),
		"requestRedirect": obj("redirect", map[string]any{
			"scheme": enum("scheme", "http", "https"), "hostname": str("hostname", 253),
			"port": map[string]any{"type": "integer", "minimum": int64(1), "maximum": int64(65535)}, "statusCode": map[string]any{"type": "integer", "enum": []any{int64(301), int64(302)}},
		}),
		"urlRewrite": obj("rewrite", map[string]any{"hostname": str("rewrite hostname", 253), "path": obj("rewrite path", map[string]any{
			"type": enum("rewrite path type", "ReplaceFullPath", "ReplacePrefixMatch"), "replaceFullPath": str("full path", 1024), "replacePrefixMatch": str("prefix", 1024),
		}, rule("self.type == 'ReplaceFullPath' ? has(self.replaceFullPath) : true", "replaceFullPath must be specified when type is set to 'ReplaceFullPath'"),
			rule("has(self.replaceFullPath) ? self.type == 'ReplaceFullPath' : true", "type must be 'ReplaceFullPath' when replaceFullPath is set"))}),
	},
		rule("!(has(self.requestHeaderModifier) && self.type != 'RequestHeaderModifier')", "filter.requestHeaderModifier must be nil if the filter.type is not RequestHeaderModifier"),
		rule("!(!has(self.requestHeaderModifier) && self.type == 'RequestHeaderModifier')", "filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type"),
		rule("!(has(self.requestRedirect) && self.type != 'RequestRedirect')", "filter.requestRedirect must be nil if the filter.type is not RequestRedirect"),
		rule("!(has(self.urlRewrite) && self.type != 'URLRewrite')", "filter.urlRewrite must be nil if the filter.type is not URLRewrite"),
	)
}

func routeRule() map[string]any {
	match := obj("match", map[string]any{
		"path": obj("path match", map[string]any{"type": enum("path type", "Exact", "PathPrefix", "RegularExpression"), "value": str("path", 1024)},
			rule("(self.type in ['Exact','PathPrefix']) ? self.value.startsWith('/') : true", "value must be an absolute path and start with '/' when type one of ['Exact', 'PathPrefix']"),
			rule("(self.type in ['Exact','PathPrefix']) ? !self.value.contains('//') : true", "must not contain '//' when type one of ['Exact', 'PathPrefix']")),
		"headers":     list("headers", 16, headerMatch("header match"), "name"),
		"queryParams": list("query params", 16, headerMatch("query param match"), "name"),
		"method":      enum("method", "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"),
	})
	backend := obj("backend", map[string]any{
		"group": str("group", 253), "kind": str("kind", 63), "name": str("name", 253), "namespace": str("namespace", 63),
		"port":    map[string]any{"type": "integer", "minimum": int64(1), "maximum": int64(65535)},
		"weight":  map[string]any{"type": "integer", "minimum": int64(0), "maximum": int64(1000000)},
		"filters": list("backend filters", 16, filter(1)),
	}, rule("(size(self.group) == 0 && self.kind == 'Service') ? has(self.port) : true", "Must have port for Service reference"))
	return obj("rule", map[string]any{
		"name":        str("rule name", 253),
		"matches":     list("matches", 64, match),
		"filters":     list("filters", 16, filter(0)),
		"backendRefs": list("backendRefs", 16, backend),
		"timeouts":    obj("timeouts", map[string]any{"request": str("request timeout", 64), "backendRequest": str("backend timeout", 64)}),
	}, rule("self.filters.all(f, f.type != 'RequestRedirect') || !has(self.backendRefs) || size(self.backendRefs) == 0", "RequestRedirect filter must not be used together with backendRefs"))
}

// routeCRD is the CRD as an object, to be read as a manifest.
func routeCRD() map[string]any {
	schema := obj("route", map[string]any{
		"spec": obj("spec", map[string]any{
			"parentRefs": list("parentRefs", 32, obj("parent", map[string]any{"name": str("parent name", 253), "sectionName": str("section", 253), "namespace": str("parent namespace", 63)})),
			"hostnames":  list("hostnames", 16, str("hostname", 253)),
			"rules":      list("rules", 16, routeRule()),
		}),
		"status": obj("status", map[string]any{"parents": list("parents", 32, obj("parent status", map[string]any{"controllerName": str("controller", 253)}))}),
	})
	return map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "routes." + group},
		"spec": map[string]any{
			"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": "Route", "listKind": "RouteList", "plural": "routes", "singular": "route"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema":       map[string]any{"openAPIV3Schema": schema}}},
		},
	}
}

// route is the i-th object: a few rules with matches, filters and
// backends, as real routes have; valid.
func route(i int) map[string]any {
	rules := []any{}
	for r := range 3 {
		rules = append(rules, map[string]any{
			"matches": []any{
				map[string]any{"path": map[string]any{"type": "PathPrefix", "value": fmt.Sprintf("/api/v%d", r)}, "headers": []any{map[string]any{"name": "x-tenant", "value": "a"}}},
				map[string]any{"path": map[string]any{"type": "Exact", "value": "/healthz"}, "method": "GET"},
			},
			"filters":     []any{map[string]any{"type": "RequestHeaderModifier", "requestHeaderModifier": map[string]any{"set": []any{map[string]any{"name": "x-route", "value": "bench"}}}}},
			"backendRefs": []any{map[string]any{"kind": "Service", "group": "", "name": fmt.Sprintf("svc-%d", r), "port": int64(8080), "weight": int64(1)}},
		})
	}
	return map[string]any{
		"apiVersion": group + "/v1", "kind": "Route",
		"metadata": map[string]any{"name": fmt.Sprintf("route-%d", i)},
		"spec":     map[string]any{"parentRefs": []any{map[string]any{"name": "gateway"}}, "hostnames": []any{"example.com"}, "rules": rules},
	}
}
