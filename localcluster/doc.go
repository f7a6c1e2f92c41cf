// Package localcluster runs hookback's local control plane, `hookback cluster
// up|down|status|kubeconfig`: etcd, kube-apiserver, kwok's controller and,
// where they can be had, kube-controller-manager and kube-scheduler, as
// background processes started by kwokctl's binary runtime, from binaries
// that are
//
//   - downloaded once from release artifacts and checked against their
//     published digests (setup-envtest's release index for etcd,
//     kube-apiserver and kubectl; dl.k8s.io's .sha512 files for
//     kube-controller-manager and kube-scheduler; the GitHub release digests
//     of kwok and kwokctl), unpacked atomically into a cache shared by every
//     clone (Resolve, Fetcher);
//   - built from Go modules (GoBuilder, from a build module embedded in
//     hookback), on request or when the release index cannot be reached;
//   - or taken as they are from a directory (--binaries, KUBEBUILDER_ASSETS).
//
// Each cluster has a state directory (its kwok workdir with pid files, logs
// and certificates, and the admin kubeconfig); Cluster.Down stops every
// process the cluster started and removes only what Up created.
package localcluster
