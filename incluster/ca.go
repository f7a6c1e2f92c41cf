package incluster

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/hookback/hookback/certs"
	"github.com/hookback/hookback/field"
)

// caCommonName names the install's CA, apart from a laptop's local CA.
const caCommonName = "hookback in-cluster CA"

// sharedCA reads the install's CA from its Secret, creating it when absent.
// Replicas starting together race to create it: the loser reads the
// winner's, so every replica serves under one CA and the caBundle never
// changes from one rollout to the next.
func sharedCA(ctx context.Context, cs kubernetes.Interface, namespace string, log *slog.Logger) (*certs.CA, error) {
	secrets := cs.CoreV1().Secrets(namespace)
	for range 3 {
		s, err := secrets.Get(ctx, CASecretName, metav1.GetOptions{})
		if err == nil {
			ca, err := certs.ParseCA(s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey])
			if err != nil {
				return nil, fmt.Errorf("read the CA in Secret %s/%s: %w (delete the Secret and restart the pods to make a new CA; the webhook configurations follow)",
					namespace, CASecretName, err)
			}
			return ca, nil
		}
		if !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("get the CA Secret %s/%s: %w", namespace, CASecretName, err)
		}
		ca, keyPEM, err := certs.NewCA(caCommonName)
		if err != nil {
			return nil, err
		}
		_, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: CASecretName, Namespace: namespace, Labels: Labels()},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: ca.CertPEM, corev1.TLSPrivateKeyKey: keyPEM},
		}, metav1.CreateOptions{})
		if err == nil {
			log.Info("created the shared CA", "secret", namespace+"/"+CASecretName, "fingerprint", ca.Fingerprint()[:16])
			return ca, nil
		}
		if apierrors.IsNotFound(err) {
			return nil, field.Advise("incluster.ServeConfig.Namespace", "create the CA Secret %s/%s: namespace %s does not exist: apply hookback render --in-cluster --install-namespace %s first, or pass serve the install's {incluster.ServeConfig.Namespace}: %w",
				namespace, CASecretName, namespace, namespace, err)
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create the CA Secret %s/%s: %w", namespace, CASecretName, err)
		}
	}
	return nil, fmt.Errorf("the CA Secret %s/%s keeps appearing and disappearing: is something deleting it?", namespace, CASecretName)
}
