# shellcheck shell=bash disable=SC2034 # variables are used by the scripts that source this file
# Shared settings for hack/cluster/{build,up,down,apiserver,kubectl}: pinned
# versions, the binary cache directory and the per-clone cluster state
# directory. The work itself is `hookback cluster` (localcluster/): these
# scripts build hookback once (hookback_bin) and call it.
# Source it; do not run it.

# Pinned versions: localcluster's defaults and its embedded build module
# (localcluster/buildmod/go.mod.in) are the same (TestHackClusterPinsTheVersions).
K8S_VERSION=v1.36.3
ETCD_VERSION=v3.6.8
KWOK_VERSION=v0.8.0

CLUSTER_NAME=hookback

HACK_CLUSTER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
REPO_ROOT="$(cd "${HACK_CLUSTER_DIR}/../.." && pwd -P)"

# Binaries live outside the clone, keyed by the versions, so every clone and
# every worktree on the machine shares them (localcluster.SourceDir and
# localcluster.ReleaseDir).
CACHE_ROOT="${HOOKBACK_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME}/.cache}/hookback}"
[[ "${CACHE_ROOT}" == /* ]] || CACHE_ROOT="${PWD}/${CACHE_ROOT}"
SOURCE_BIN_DIR="${CACHE_ROOT}/cluster-bin/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
case "$(uname -m)" in
x86_64) _arch=amd64 ;;
aarch64 | arm64) _arch=arm64 ;;
*) _arch=$(uname -m) ;;
esac
_platform="$(uname -s | tr '[:upper:]' '[:lower:]')-${_arch}"
RELEASE_BIN_DIR="${CACHE_ROOT}/cluster-release/envtest-${K8S_VERSION}-${_platform}"
# BIN_DIR holds the kubectl, etcd and kube-apiserver the cluster runs: the
# release binaries when all of them were downloaded (hookback cluster up uses
# them first), else the source build.
BIN_DIR="${SOURCE_BIN_DIR}"
if [[ -x "${RELEASE_BIN_DIR}/kubectl" && -x "${CACHE_ROOT}/cluster-release/kwok-${KWOK_VERSION}-${_platform}/kwokctl" ]] &&
	[[ "${_platform}" != linux-* || -x "${CACHE_ROOT}/cluster-release/kube-${K8S_VERSION}-${_platform}/kube-scheduler" ]]; then
	BIN_DIR="${RELEASE_BIN_DIR}"
fi

# Cluster state lives inside the clone (.cache/ is gitignored).
STATE_DIR="${REPO_ROOT}/.cache/cluster"
KWOK_WORKDIR="${STATE_DIR}/kwok"
CLUSTER_WORKDIR="${KWOK_WORKDIR}/clusters/${CLUSTER_NAME}"
KUBECONFIG_OUT="${STATE_DIR}/kubeconfig"
# The kubeconfig kwokctl adds its context to (instead of ~/.kube/config).
KWOKCTL_KUBECONFIG="${KWOK_WORKDIR}/kubeconfig"

BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl)

# hookback as the cluster scripts run it, built from this clone; go build
# only relinks it when the sources changed. Kept apart from bin/hookback,
# which make build stamps with a version. Built as the release is (static,
# -trimpath: the Makefile's RELEASE_CONFIG_TARGETS), so it shares its compiled packages
# with make vet, the e2e tests' binaries, the release check and the image.
HOOKBACK_BIN="${REPO_ROOT}/.cache/bin/hookback"

log() {
	printf '%s [hack/cluster/%s] %s\n' "$(date +%H:%M:%S)" "${0##*/}" "$*" >&2
}

die() {
	log "ERROR: $*"
	exit 1
}

# hookback_bin builds (when needed) and prints HOOKBACK_BIN.
hookback_bin() {
	command -v go >/dev/null 2>&1 || die "go is not on PATH; it is needed to build hookback"
	mkdir -p "$(dirname "${HOOKBACK_BIN}")"
	with_lock "${HOOKBACK_BIN}.lock" \
		bash -c 'cd "$1" && CGO_ENABLED=0 go build -trimpath -o "$2" .' _ "${REPO_ROOT}" "${HOOKBACK_BIN}" 9>&- ||
		die "go build of hookback failed"
	echo "${HOOKBACK_BIN}"
}

# hookback_cluster SUBCOMMAND ARGS...: hookback cluster on this clone's
# cluster (name hookback, state in .cache/cluster, binaries from the shared
# cache: downloaded, or built from source where nothing can be downloaded).
hookback_cluster() {
	local sub=$1 bin
	shift
	bin=$(hookback_bin)
	"${bin}" cluster "${sub}" --name "${CLUSTER_NAME}" --cluster-dir "${STATE_DIR}" --cache-dir "${CACHE_ROOT}" "$@"
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
