package tunnel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hookback/hookback/field"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// Attachment keeps this process attached to the session's relay: whoever
// starts Run stops it by ending its ctx; Wait returns once the first
// attach is up, or why it cannot come up.
type Attachment struct {
	s        *Session
	attacher *Attacher
	// up closes on the first attach; ended when Run returns.
	up, ended chan struct{}
	attaches  int
}

// Attach builds the attachment that hands each tunnelled connection to
// local, re-attaching with backoff; onReattach runs on every attach after
// the first. metrics gets the attacher's gauges.
func (s *Session) Attach(local string, metrics prometheus.Registerer, onReattach func()) (*Attachment, error) {
	at := &Attachment{s: s, up: make(chan struct{}), ended: make(chan struct{})}
	d := s.dialer
	if d == nil {
		rc := rest.CopyConfig(s.o.Rest)
		rc.Timeout = 0 // a port-forward lives as long as the tunnel
		d = &PortForward{Config: rc, Client: s.o.Client, Namespace: s.spec.Namespace, Pod: s.podName, Port: DefaultControlPort}
	}
	a, err := NewAttacher(AttachOptions{
		Dialer: d,
		Secret: s.spec.Secret, Local: local, Log: s.log, Metrics: metrics,
		OnUp: func() {
			at.attaches++ // the attacher calls OnUp from its one goroutine
			if at.attaches == 1 {
				close(at.up)
				return
			}
			if onReattach != nil {
				onReattach()
			}
		},
	})
	if err != nil {
		return nil, err
	}
	at.attacher = a
	return at, nil
}

// Run attaches, and attaches again after every loss, until ctx ends.
func (at *Attachment) Run(ctx context.Context) error {
	defer close(at.ended)
	if err := at.attacher.Start(ctx); err != nil {
		return fmt.Errorf("reverse tunnel: %w", err)
	}
	return nil
}

// Wait returns once the first attach is up, so that what follows (the
// canary) goes through the tunnel; it fails at once on a relay image the
// cluster cannot pull, and after the attach timeout on anything else,
// saying how to look at the relay.
func (at *Attachment) Wait(ctx context.Context) error {
	s := at.s
	timeout := s.o.AttachTimeout
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	// A relay image that cannot be pulled fails now, not after the timeout.
	poll := time.NewTicker(2 * time.Second)
	defer poll.Stop()
	for {
		select {
		case <-at.up:
			return nil
		case <-at.ended:
			// Refused for good (ErrDenied); Run's error says so.
			return errors.New("the reverse tunnel stopped before it attached")
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
			if why := s.pullFailure(ctx); why != "" {
				return field.Advise("tunnel.Config.Image", "the relay image %s cannot be pulled (%s): push it where the cluster can pull it (`make image`) and pass {tunnel.Config.Image}", s.spec.Image, why)
			}
		case <-wait.C:
			_, why := s.podName(ctx)
			return field.Advise("tunnel.Config.Image", "the reverse tunnel did not attach within %s (%v): check the relay with `kubectl -n %s describe pod -l %s`; an image the cluster cannot pull needs another {tunnel.Config.Image}",
				timeout, why, s.spec.Namespace, s.spec.Selector())
		}
	}
}

// podName is the relay's ready pod, for each port-forward: after a
// restart of the pod it is another one.
func (s *Session) podName(ctx context.Context) (string, error) {
	pods, err := s.o.Client.CoreV1().Pods(s.spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.spec.Selector()})
	if err != nil {
		return "", fmt.Errorf("find the relay pod: %w", err)
	}
	var why string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
			return p.Name, nil
		}
		why = podState(&p)
	}
	if why == "" {
		why = "no pod yet"
	}
	return "", fmt.Errorf("relay pod %s/%s not ready: %s", s.spec.Namespace, s.spec.Selector(), why)
}

// pullFailure is why the relay's image cannot be pulled, when the kubelet
// has given up for now (ImagePullBackOff) or never can (a malformed or
// never-pull reference): waiting longer would not help, the image would.
func (s *Session) pullFailure(ctx context.Context) string {
	pods, err := s.o.Client.CoreV1().Pods(s.spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: s.spec.Selector()})
	if err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				switch w.Reason {
				case "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
					return podState(&p)
				}
			}
		}
	}
	return ""
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podState says why a pod is not ready, in the words kubectl would show.
func podState(p *corev1.Pod) string {
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s %s: %s", p.Name, w.Reason, w.Message)
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && c.Message != "" {
			return fmt.Sprintf("%s %s: %s", p.Name, c.Reason, c.Message)
		}
	}
	return fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
}
