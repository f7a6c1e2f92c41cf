package rbac

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Grant is the least-privilege role for a list of declared permissions: a
// ClusterRole for what is needed in every namespace (or cluster-scoped), a
// Role per namespace for the rest, each bound to the same subjects. It is
// derived from the declarations check verifies, so the two cannot drift.
type Grant struct {
	ClusterRole        *rbacv1.ClusterRole
	ClusterRoleBinding *rbacv1.ClusterRoleBinding
	Roles              []*rbacv1.Role
	RoleBindings       []*rbacv1.RoleBinding
}

// GrantFor groups perms into rules: one rule per (group, resource or
// resource/subresource, resourceName) with the verbs sorted, so that a grant
// restricted by resourceNames stays restricted. name names every object.
func GrantFor(perms []Permission, name string, subjects []rbacv1.Subject) *Grant {
	byNS := map[string][]Permission{}
	for _, p := range perms {
		byNS[p.Namespace] = append(byNS[p.Namespace], p)
	}
	// Not managed-by: whoever applies these owns them; hookback never
	// writes or deletes them.
	labels := map[string]string{"app.kubernetes.io/part-of": partOf}
	meta := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}
	}
	out := &Grant{
		ClusterRole: &rbacv1.ClusterRole{TypeMeta: typeMeta("ClusterRole"), ObjectMeta: meta(""), Rules: rules(byNS[""])},
		ClusterRoleBinding: &rbacv1.ClusterRoleBinding{TypeMeta: typeMeta("ClusterRoleBinding"), ObjectMeta: meta(""),
			Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}},
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		if ns != "" {
			namespaces = append(namespaces, ns)
		}
	}
	slices.Sort(namespaces)
	for _, ns := range namespaces {
		out.Roles = append(out.Roles, &rbacv1.Role{TypeMeta: typeMeta("Role"), ObjectMeta: meta(ns), Rules: rules(byNS[ns])})
		out.RoleBindings = append(out.RoleBindings, &rbacv1.RoleBinding{TypeMeta: typeMeta("RoleBinding"), ObjectMeta: meta(ns),
			Subjects: subjects, RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
	}
	return out
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: kind}
}

// rules merges the verbs of permissions on the same object set, in a
// stable order (by group, resource, name).
func rules(perms []Permission) []rbacv1.PolicyRule {
	type key struct{ group, resource, name string }
	verbs := map[key][]string{}
	for _, p := range perms {
		res := p.Resource
		if p.Subresource != "" {
			res += "/" + p.Subresource
		}
		k := key{p.Group, res, p.Name}
		if !slices.Contains(verbs[k], p.Verb) {
			verbs[k] = append(verbs[k], p.Verb)
		}
	}
	keys := make([]key, 0, len(verbs))
	for k := range verbs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return strings.Compare(a.group+"\x00"+a.resource+"\x00"+a.name, b.group+"\x00"+b.resource+"\x00"+b.name)
	})
	out := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		v := verbs[k]
		slices.Sort(v)
		r := rbacv1.PolicyRule{APIGroups: []string{k.group}, Resources: []string{k.resource}, Verbs: v}
		if k.name != "" {
			r.ResourceNames = []string{k.name}
		}
		out = append(out, r)
	}
	return out
}

// Objects are the objects in apply order: roles before their bindings.
func (r *Grant) Objects() []any {
	out := []any{r.ClusterRole, r.ClusterRoleBinding}
	for i := range r.Roles {
		out = append(out, r.Roles[i], r.RoleBindings[i])
	}
	return out
}

// YAML is a multi-document stream of Objects, behind header (comment lines
// without the leading "# ").
func (r *Grant) YAML(header string) ([]byte, error) {
	var buf bytes.Buffer
	for _, line := range strings.Split(strings.TrimRight(header, "\n"), "\n") {
		if header != "" {
			buf.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
	}
	for _, obj := range r.Objects() {
		b, err := yaml.Marshal(obj)
		if err != nil {
			return nil, fmt.Errorf("encode %T: %w", obj, err)
		}
		buf.WriteString("---\n")
		buf.Write(bytes.ReplaceAll(b, []byte("  creationTimestamp: null\n"), nil))
	}
	return buf.Bytes(), nil
}

// partOf labels the objects as hookback's without claiming them: the value
// of hookback's app.kubernetes.io/managed-by label, which they must not carry.
const partOf = "hookback"
