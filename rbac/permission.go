package rbac

// Permission is one access a part of hookback (a webhook, a controller, the
// registration itself) needs from the cluster, in the shape of a
// SelfSubjectAccessReview's resource attributes. Parts declare what they
// need; preflight checks every declared permission before anything is
// written, and names the missing ones.
type Permission struct {
	Verb        string
	Group       string
	Resource    string
	Subresource string
	// Namespace is empty for "all namespaces" (or cluster-scoped).
	Namespace string
	// Name is set where only one object is touched, so that a grant
	// restricted by resourceNames passes.
	Name string
	// Why says what it is needed for.
	Why string
	// Part names the webhook or controller that needs it; "core" for
	// hookback itself.
	Part string
}

// String is "verb resource.group/subresource name".
func (p Permission) String() string {
	r := p.Resource
	if p.Group != "" {
		r += "." + p.Group
	}
	if p.Subresource != "" {
		r += "/" + p.Subresource
	}
	if p.Name != "" {
		r += " " + p.Name
	}
	return p.Verb + " " + r
}

// key identifies the access, whatever needs it.
func (p Permission) key() [6]string {
	return [6]string{p.Verb, p.Group, p.Resource, p.Subresource, p.Namespace, p.Name}
}

// Merge concatenates lists, keeping the first of duplicates.
func Merge(lists ...[]Permission) []Permission {
	seen := map[[6]string]bool{}
	var out []Permission
	for _, l := range lists {
		for _, p := range l {
			if k := p.key(); !seen[k] {
				seen[k] = true
				out = append(out, p)
			}
		}
	}
	return out
}
