// Package e2e holds hookback's end-to-end tests. TestMain builds the hookback
// binary, e2e/markhook, examples/custom-webhook and e2e/crupstream, and the
// tests run them against a real kube-apiserver: the cluster named by
// $KUBECONFIG when set, otherwise the local control plane that hack/cluster/up
// starts. Every wait is a condition polled against a deadline.
package e2e
