// Package manifests reads the user's own webhook manifests
// (`--webhook-config`, project mode): files, directories, kustomize
// directories rendered in process, multi-document bundles and v1 Lists, and
// stdin; it sorts what it read into webhook configurations, CRDs and what it
// leaves out, and rewrites the configurations so that every webhook, and
// every CRD's conversion, points at hookback. Errors name the file and the
// document.
package manifests
