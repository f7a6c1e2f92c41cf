// Package e2e holds hookback's end-to-end tests. They run the hookback binary
// (built with the e2e tag) against a real kube-apiserver: the cluster named by
// $KUBECONFIG when set, otherwise the local control plane that hack/cluster/up
// starts. Every wait is a condition polled against a deadline.
package e2e
