package tunnel

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/registration"
)

// Default ports of the relay pod.
const (
	DefaultListenPort  = 8443
	DefaultControlPort = 9443
	// SecretKey is the key of the session secret in the relay's Secret.
	SecretKey = "secret"
	// labelRelay selects one session's relay pods.
	labelRelay = "hookback.dev/relay"
)

// AppName is every relay's app.kubernetes.io/name: with hookback's
// managed-by label it tells a relay from an in-cluster install, whose
// objects carry the same session labels.
const AppName = "hookback-relay"

// Spec is one session's relay in the cluster.
type Spec struct {
	Name, Namespace, Session string
	Image                    string
	Secret                   string
	ListenPort, ControlPort  int32 // default DefaultListenPort, DefaultControlPort
}

// Objects are what a session writes for its relay: the Secret holding the
// session secret, the Deployment running `hookback relay`, and the Service
// the webhook configurations reference. All carry the session's labels
// (managed-by and session), the ones hookback's cleanup selects on.
type Objects struct {
	Secret     *corev1.Secret
	Deployment *appsv1.Deployment
	Service    *corev1.Service
}

// ServiceHost is the DNS name the serving certificate must cover: the
// apiserver dials NAME.NAMESPACE.svc for a clientConfig.service.
func (s Spec) ServiceHost() string { return s.Name + "." + s.Namespace + ".svc" }

// DNSNames are every name the apiserver may dial the Service by,
// ServiceHost first.
func (s Spec) DNSNames() []string {
	return []string{s.ServiceHost(), s.ServiceHost() + ".cluster.local", s.Name + "." + s.Namespace}
}

// Selector is the label selector of this relay's pods.
func (s Spec) Selector() string { return labelRelay + "=" + s.Name }

// Manifests builds s's objects.
func Manifests(s Spec) Objects {
	if s.ListenPort == 0 {
		s.ListenPort = DefaultListenPort
	}
	if s.ControlPort == 0 {
		s.ControlPort = DefaultControlPort
	}
	meta := metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace, Labels: s.labels()}
	podLabels := s.labels()
	return Objects{
		Secret: &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta,
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{SecretKey: []byte(s.Secret)},
		},
		Deployment: &appsv1.Deployment{
			TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{
				// One replica: the laptop attaches to one relay, and the
				// newest attach wins.
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{labelRelay: s.Name}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
					Spec:       s.podSpec(),
				},
			},
		},
		Service: &corev1.Service{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta,
			Spec: corev1.ServiceSpec{
				Selector: map[string]string{labelRelay: s.Name},
				Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP,
					TargetPort: intstr.FromString("https")}},
			},
		},
	}
}

func (s Spec) labels() map[string]string {
	return map[string]string{
		registration.LabelManagedBy: registration.ManagedByValue,
		registration.LabelSession:   s.Session,
		"app.kubernetes.io/name":    AppName,
		labelRelay:                  s.Name,
	}
}

func (s Spec) podSpec() corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken: ptr.To(false), // the relay never calls the apiserver
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name: "relay", Image: s.Image,
			Args: []string{"relay", "--log-format", "json",
				"--listen", ":" + itoa(s.ListenPort), "--control", ":" + itoa(s.ControlPort),
				"--metrics-address", ":" + itoa(DefaultMetricsPort)},
			Env: []corev1.EnvVar{{Name: "HOOKBACK_RELAY_SECRET", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: s.Name}, Key: SecretKey},
			}}},
			Ports: []corev1.ContainerPort{
				{Name: "https", ContainerPort: s.ListenPort, Protocol: corev1.ProtocolTCP},
				{Name: "control", ContainerPort: s.ControlPort, Protocol: corev1.ProtocolTCP},
				{Name: "metrics", ContainerPort: DefaultMetricsPort, Protocol: corev1.ProtocolTCP},
			},
			LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("metrics")}}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("control")}}},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }
