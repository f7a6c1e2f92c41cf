package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/incluster"
	"github.com/hookback/hookback/registration"
)

// metricValue is the value of an unlabelled metric on a replica's
// /metrics, -1 when absent or unreachable.
func metricValue(r *replica, name string) float64 {
	return metric(r, name+" ")
}

// metric is the value of the first /metrics line starting with prefix.
func metric(r *replica, prefix string) float64 { return metricAt(r.health(), prefix) }

// metricAt is metric of the health server at base (http://host:port).
func metricAt(base, prefix string) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	body, code := fetch(ctx, base+"/metrics")
	if code != http.StatusOK {
		return -1
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err == nil {
				return v
			}
		}
	}
	return -1
}

// admissions is how many reviews of pod-name a replica answered.
func admissions(r *replica) int {
	n := 0
	sc := bufio.NewScanner(strings.NewReader(tail(r.proc.log, 100000)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "msg=admission webhook=pod-name") {
			n++
		}
	}
	return n
}

// queueAdds is how many keys the pod-name-label controller queued on a
// replica; 0 when it never ran there.
func queueAdds(r *replica) float64 {
	return max(metric(r, `workqueue_adds_total{name="pod-name-label"} `), 0)
}

// leader returns the replica that leads and the other, checking that
// exactly one leads and that the Lease names it.
func (in *inClusterInstall) leader(t *testing.T) (lead, follow *replica) {
	t.Helper()
	eventually(t, "exactly one leader", func(ctx context.Context) (bool, error) {
		lead, follow = nil, nil
		for _, r := range in.replicas {
			switch metricValue(r, "hookback_leader") {
			case 1:
				if lead != nil {
					return false, fmt.Errorf("both %s and %s lead", lead.id, r.id)
				}
				lead = r
			case 0:
				follow = r
			}
		}
		if lead == nil || follow == nil {
			return false, nil
		}
		l, err := env.client.CoordinationV1().Leases(in.ns).Get(ctx, "hookback", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return ptr.Deref(l.Spec.HolderIdentity, "") == lead.id, nil
	})
	return lead, follow
}

// checkRegistration checks that serve applied the configurations with a
// service reference, the caBundle of the CA in the Secret and the
// template's failurePolicy.
func (in *inClusterInstall) checkRegistration(t *testing.T, policy admissionregistrationv1.FailurePolicyType) {
	t.Helper()
	ctx := context.Background()
	var cfg *admissionregistrationv1.ValidatingWebhookConfiguration
	eventually(t, "the validating configuration", func(ctx context.Context) (bool, error) {
		var err error
		cfg, err = env.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "hookback-validating", metav1.GetOptions{})
		return err == nil, err
	})
	ca, err := env.client.CoreV1().Secrets(in.ns).Get(ctx, "hookback-ca", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the CA Secret: %v", err)
	}
	for _, w := range cfg.Webhooks {
		svc := w.ClientConfig.Service
		if svc == nil || svc.Namespace != in.ns || svc.Name != "hookback" || ptr.Deref(svc.Port, 0) != 443 || w.ClientConfig.URL != nil {
			t.Errorf("webhook %s: clientConfig %+v, want service %s/hookback:443", w.Name, w.ClientConfig, in.ns)
		}
		if string(w.ClientConfig.CABundle) != string(ca.Data[corev1.TLSCertKey]) {
			t.Errorf("webhook %s: caBundle is not the CA of Secret %s/hookback-ca", w.Name, in.ns)
		}
		if ptr.Deref(w.FailurePolicy, "") != policy {
			t.Errorf("webhook %s: failurePolicy %v, want the template's %s", w.Name, ptr.Deref(w.FailurePolicy, ""), policy)
		}
	}
}

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{controllers.AddPodNameLabelAnnotation: "true"}},
		Spec: corev1.PodSpec{AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/pause"}}},
	}
}

// denied creates (dry-run) a pod whose name pod-name denies: a denial
// proves a replica answered.
func (in *inClusterInstall) denied(ctx context.Context) error {
	_, err := env.client.CoreV1().Pods(in.workload).Create(ctx, testPod("offensive-"+strconv.FormatInt(time.Now().UnixNano()%1e6, 10)),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `pod name contains "offensive"`) {
		return fmt.Errorf("want a denial by pod-name, got %v", err)
	}
	return nil
}

func (in *inClusterInstall) createPod(t *testing.T, name string) string {
	t.Helper()
	if _, err := env.client.CoreV1().Pods(in.workload).Create(context.Background(), testPod(name), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	return name
}

// waitLabelled waits for pod-name-label's label on a pod.
func (in *inClusterInstall) waitLabelled(t *testing.T, name string) {
	t.Helper()
	eventually(t, "pod "+name+" labelled by the leader", func(ctx context.Context) (bool, error) {
		p, err := env.client.CoreV1().Pods(in.workload).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.Labels[controllers.PodNameLabel] == name, nil
	})
}

// load sends dry-run admissions one after another until stopped,
// counting the answers and the failures.
type load struct {
	ok     atomic.Int64
	mu     sync.Mutex
	failed []error
	cancel context.CancelFunc
	done   chan struct{}
}

func (in *inClusterInstall) startLoad(ctx context.Context) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			err := in.denied(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				l.mu.Lock()
				l.failed = append(l.failed, err)
				l.mu.Unlock()
			} else {
				l.ok.Add(1)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return l
}

func (l *load) stop() (int64, []error) {
	l.cancel()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok.Load(), l.failed
}

// waitPresence waits for the presence Lease to be held by r and to name the
// install's parts, as laptop sessions read it.
func (in *inClusterInstall) waitPresence(t *testing.T, r *replica) {
	t.Helper()
	name := registration.LeaseName(incluster.PresenceSession)
	eventually(t, "presence Lease "+in.ns+"/"+name+" held by "+r.id, func(ctx context.Context) (bool, error) {
		l, err := env.client.CoordinationV1().Leases(in.ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		holder, parts := ptr.Deref(l.Spec.HolderIdentity, ""), l.Annotations[registration.AnnotationParts]
		if holder == r.id && parts != "pod-name,pod-name-label" {
			return false, fmt.Errorf("presence Lease names parts %q, want pod-name,pod-name-label", parts)
		}
		return holder == r.id && l.Labels[registration.LabelSession] == incluster.PresenceSession, nil
	})
}
