package incluster

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// nonRootUID is distroless's nonroot user, the image's USER.
const nonRootUID = 65532

func selector() *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: Labels()} }

// list is a --webhooks or --controllers value; "none" because an empty
// flag would mean the default, all.
func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ",")
}

func deployment(o Options) *appsv1.Deployment {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: meta(o, Name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(o.Replicas),
			Selector: selector(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: Labels()},
				Spec:       podSpec(o),
			},
		},
	}
}

func podSpec(o Options) corev1.PodSpec {
	return corev1.PodSpec{
		ServiceAccountName:           Name,
		AutomountServiceAccountToken: ptr.To(true),
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](nonRootUID),
			RunAsGroup:     ptr.To[int64](nonRootUID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		// Spread so that one node's loss leaves a replica serving.
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: corev1.LabelHostname,
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selector(),
		}},
		Containers: []corev1.Container{container(o)},
		// The root filesystem is read-only; anything the process writes
		// goes here.
		Volumes: volumes(o),
	}
}

func container(o Options) corev1.Container {
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: path, Port: intstr.FromString("metrics")}}, PeriodSeconds: 10}
	}
	return corev1.Container{
		Name:  Name,
		Image: o.Image,
		Args:  args(o),
		Ports: []corev1.ContainerPort{
			{Name: "https", ContainerPort: WebhookPort, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: MetricsPort, Protocol: corev1.ProtocolTCP},
		},
		Env: []corev1.EnvVar{
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
		},
		ReadinessProbe: probe("/readyz"),
		LivenessProbe:  probe("/healthz"),
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To[int64](nonRootUID),
			ReadOnlyRootFilesystem:   ptr.To(true),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		VolumeMounts: mounts(o),
	}
}

// Where the cert-manager Secret and a custom template are mounted.
const (
	tlsDir        = "/etc/hookback/tls"
	tlsSecretName = "hookback-tls"
	templateDir   = "/etc/hookback/template"
	templateKey   = "webhooks.yaml.tmpl"
	templateName  = "hookback-template"
)

// templateConfigMap carries the user's template to the pods, so that what
// they apply is what was rendered.
func templateConfigMap(o Options) *corev1.ConfigMap {
	return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta(o, templateName),
		Data: map[string]string{templateKey: string(o.Template)}}
}

func args(o Options) []string {
	a := []string{"serve", "--install-namespace", o.Namespace, "--webhooks", list(o.Webhooks), "--controllers", list(o.Controllers)}
	if o.CertManager {
		a = append(a, "--tls-cert-file", tlsDir+"/tls.crt", "--tls-key-file", tlsDir+"/tls.key")
	}
	if o.CustomTemplate {
		a = append(a, "--template", templateDir+"/"+templateKey)
	}
	return a
}

func mounts(o Options) []corev1.VolumeMount {
	m := []corev1.VolumeMount{{Name: "tmp", MountPath: "/tmp"}}
	if o.CertManager {
		m = append(m, corev1.VolumeMount{Name: "tls", MountPath: tlsDir, ReadOnly: true})
	}
	if o.CustomTemplate {
		m = append(m, corev1.VolumeMount{Name: "template", MountPath: templateDir, ReadOnly: true})
	}
	return m
}

func volumes(o Options) []corev1.Volume {
	v := []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if o.CertManager {
		v = append(v, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: tlsSecretName}}})
	}
	if o.CustomTemplate {
		v = append(v, corev1.Volume{Name: "template", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: templateName}}}})
	}
	return v
}

// certManager are the Issuers and Certificates of the serving certificate:
// a self-signed Issuer makes a CA, a CA Issuer signs the serving Certificate
// for the Service's names with it, and cainjector copies that CA into the
// configurations' caBundle (AnnotationInjectCA). The CA, not the leaf, is
// what the apiserver trusts: a self-signed leaf is its own CA, and every
// renewal (a new key) changed the caBundle at once, while the pods served
// the old leaf until the kubelet updated their Secret volume, so every call
// failed TLS, and failed open, for up to a minute. Both Secrets carry the
// install's labels, so uninstall finds them.
func certManager(o Options) []runtime.Object {
	obj := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "cert-manager.io/v1", "kind": kind, "spec": spec}}
		u.SetName(name)
		u.SetNamespace(o.Namespace)
		u.SetLabels(Labels())
		return u
	}
	secretTemplate := func() map[string]any {
		labels := map[string]any{}
		for k, v := range Labels() {
			labels[k] = v
		}
		return map[string]any{"labels": labels}
	}
	names := make([]any, 0, 3)
	for _, n := range DNSNames(Name, o.Namespace) {
		names = append(names, n)
	}
	return []runtime.Object{
		obj("Issuer", Name+"-selfsigned", map[string]any{"selfSigned": map[string]any{}}),
		obj("Certificate", caCertificateName, map[string]any{"isCA": true, "commonName": Name + "-ca." + o.Namespace,
			"secretName": caCertificateName, "duration": "87600h", "secretTemplate": secretTemplate(),
			"privateKey": map[string]any{"algorithm": "ECDSA", "size": int64(256)},
			"issuerRef":  map[string]any{"kind": "Issuer", "name": Name + "-selfsigned"}}),
		obj("Issuer", caCertificateName, map[string]any{"ca": map[string]any{"secretName": caCertificateName}}),
		obj("Certificate", Name, map[string]any{"secretName": tlsSecretName, "dnsNames": names, "secretTemplate": secretTemplate(),
			"issuerRef": map[string]any{"kind": "Issuer", "name": caCertificateName}}),
	}
}

// caCertificateName names the cert-manager CA's Certificate, its Secret and
// the Issuer that signs with it.
const caCertificateName = Name + "-cert-manager-ca"

// podDisruptionBudget lets a drain evict one replica at a time. It is
// maxUnavailable, not minAvailable 1: with --replicas 1 that would block
// every drain of the node the pod runs on.
func podDisruptionBudget(o Options) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: meta(o, Name),
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(1)), Selector: selector()},
	}
}

func service(o Options) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(o, Name),
		Spec: corev1.ServiceSpec{
			Selector: Labels(),
			Ports: []corev1.ServicePort{{Name: "https", Port: ServicePort,
				TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP}},
		},
	}
}
