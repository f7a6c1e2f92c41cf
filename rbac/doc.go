// Package rbac holds the permissions hookback's parts declare (each built-in
// webhook and controller, registration, the CRDs, serving in a cluster) and
// the least-privilege Roles and ClusterRoles derived from them, so that what
// `hookback check` verifies and what `hookback rbac` prints cannot drift.
package rbac
