package registration

import "strings"

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
