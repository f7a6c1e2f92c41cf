# shellcheck shell=bash disable=SC2034 # variables are used by the scripts that source this file
# Shared settings for hack/cluster/{build,up,down}: pinned versions, the
# binary cache directory and the per-clone cluster state directory.
# Source it; do not run it.

# Pinned versions. hack/cluster/tools/go.mod must require the same ones
# (hack/cluster/build checks that before it builds anything).
K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
KWOK_VERSION=v0.8.0

CLUSTER_NAME=hookback

HACK_CLUSTER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd "${HACK_CLUSTER_DIR}/../.." && pwd -P)"
TOOLS_DIR="${HACK_CLUSTER_DIR}/tools"

# Built binaries live outside the clone, keyed by the versions, so every clone
# and every worktree on the machine shares one build.
CACHE_ROOT="${HOOKBACK_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/hookback}"
[[ "${CACHE_ROOT}" == /* ]] || CACHE_ROOT="${PWD}/${CACHE_ROOT}"
BIN_DIR="${CACHE_ROOT}/cluster-bin/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"

# Cluster state lives inside the clone (.cache/ is gitignored).
STATE_DIR="${REPO_ROOT}/.cache/cluster"
KWOK_WORKDIR="${STATE_DIR}/kwok"
CLUSTER_WORKDIR="${KWOK_WORKDIR}/clusters/${CLUSTER_NAME}"
KUBECONFIG_OUT="${STATE_DIR}/kubeconfig"
# The kubeconfig kwokctl adds its context to (instead of ~/.kube/config).
KWOKCTL_KUBECONFIG="${KWOK_WORKDIR}/kubeconfig"

BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)

log() {
	printf '%s [hack/cluster/%s] %s\n' "$(date +%H:%M:%S)" "${0##*/}" "$*" >&2
}

die() {
	log "ERROR: $*"
	exit 1
}

# kwokctl_env runs a command with the environment kwokctl needs: our workdir,
# our binaries first on PATH (kwokctl prefers a kubectl found on PATH), and no
# stray KWOK_* settings from the caller's shell.
kwokctl_env() {
	local -a unset_args=()
	local v
	while IFS= read -r v; do
		unset_args+=(-u "${v}")
	done < <(compgen -e | grep '^KWOK_' || true)
	env "${unset_args[@]}" \
		KWOK_WORKDIR="${KWOK_WORKDIR}" \
		PATH="${BIN_DIR}:${PATH}" \
		"$@"
}

# with_lock FILE CMD...: run CMD holding an exclusive lock on FILE (when flock
# exists), so two concurrent callers do not race each other.
# A nested call for the same FILE (e.g. up running down) does not lock again.
with_lock() {
	local lock=$1
	shift
	if [[ "${HOOKBACK_CLUSTER_LOCK_HELD:-}" == *"|${lock}|"* ]] || ! command -v flock >/dev/null 2>&1; then
		"$@"
		return
	fi
	mkdir -p "$(dirname "${lock}")"
	(
		export HOOKBACK_CLUSTER_LOCK_HELD="${HOOKBACK_CLUSTER_LOCK_HELD:-}|${lock}|"
		flock 9
		"$@"
	) 9>"${lock}"
}
