package localcluster

import (
	"bytes"
	"text/template"
)

// kwokctlConfig is the KwokctlConfiguration kwokctl reads from
// $KWOK_WORKDIR/kwok.yaml, for create and delete alike. Every setting here is
// one the repository's e2e suite relies on (see the comments).
var kwokctlConfig = template.Must(template.New("kwok.yaml").Parse(`# Written by hookback cluster up; rewritten on every run.
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  runtime: binary
  kubeVersion: {{.KubeVersion}}
  kwokVersion: {{.KwokVersion}}
  bindAddress: 127.0.0.1
  # kwokctl passes --audit-policy-file and --audit-log-path (its logs/audit.log).
  kubeAuditPolicy: {{.AuditPolicy}}
  securePort: true
  kubeAuthorization: true
  kubeAdmission: true
  quietPull: true
  # 1 = real kubelet timings: node status heartbeat every 20-25s (with
  # --node-lease-duration-seconds 0 on create).
  heartbeatFactor: 1
  cacheDir: {{.CacheDir}}
  kubeApiserverBinary: {{.B.KubeAPIServer}}
  kubectlBinary: {{.B.Kubectl}}
  etcdBinary: {{.B.Etcd}}
  kwokControllerBinary: {{.B.Kwok}}
{{- if .B.HasControllers}}
  kubeControllerManagerBinary: {{.B.KubeControllerManager}}
  kubeSchedulerBinary: {{.B.KubeScheduler}}
{{- else}}
  # No kube-controller-manager or kube-scheduler for this platform: the
  # cluster runs without them (Deployments make no pods).
  disable:
  - kube-controller-manager
  - kube-scheduler
{{- end}}
  # Pod port-forward for fake pods, to an address a PortForward names.
  enableCRDs:
  - PortForward
# The apiserver calls a clientConfig.service webhook at its EndpointSlice's
# addresses, not a Service IP: no kube-proxy runs here.
componentsPatches:
- name: kube-apiserver
  extraArgs:
  - key: enable-aggregator-routing
    value: "true"
{{- if .B.HasControllers}}
# One instance each: no leader election. With it, a controller-manager or
# scheduler that cannot renew its Lease while the apiserver is down exits,
# and nothing restarts it.
- name: kube-controller-manager
  extraArgs:
  - key: leader-elect
    value: "false"
- name: kube-scheduler
  extraArgs:
  - key: leader-elect
    value: "false"
{{- end}}
`))

type configData struct {
	KubeVersion, KwokVersion, CacheDir, AuditPolicy string
	B                                               Binaries
}

func renderKwokctlConfig(d configData) ([]byte, error) {
	var buf bytes.Buffer
	err := kwokctlConfig.Execute(&buf, d)
	return buf.Bytes(), err
}

// auditPolicy: writes (create, update, patch, delete) at level Request,
// which keeps the mutating webhooks' audit annotations
// (patch.webhook.admission.k8s.io/round_R_index_I, with each patch) and the
// object as the client sent it, what `start --chain` attributes patches by;
// nothing for reads, Events, Leases and the node heartbeats, so the log
// stays small.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources:
  - {group: "", resources: [events, nodes, nodes/status]}
  - {group: coordination.k8s.io, resources: [leases]}
  - {group: events.k8s.io, resources: [events]}
- level: Request
  verbs: [create, update, patch, delete]
- level: None
`

// nodeName is the one fake node every cluster gets.
const nodeName = "kwok-node-0"
