package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/hookback/hookback/builtin/controllers"
)

// crManagerEnv, when set, makes this program a controller-runtime manager
// instead of the bench: the reference the manager section compares
// hookback's pod-name-label with. Its value is the metrics address.
const crManagerEnv = "BENCH_CR_MANAGER_METRICS"

// runCRManager is a controller-runtime v0.24 manager with its default
// options (a cache of whole pods, no transform) running pod-name-label's
// reconcile. It prints "synced" once its cache has listed.
func runCRManager(metricsAddr string) error {
	crlog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Not ctrl.GetConfig: the package that has it registers a -kubeconfig
	// flag of its own, which collides with the bench's.
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return err
	}
	// As ctrl.GetConfig does: no client-side rate limit (API priority and
	// fairness instead). client-go's default 5 QPS would time the limiter.
	if cfg.QPS == 0 {
		cfg.QPS = -1
	}
	mgr, err := manager.New(cfg, manager.Options{Metrics: metricsserver.Options{BindAddress: metricsAddr}})
	if err != nil {
		return err
	}
	if err := builder.ControllerManagedBy(mgr).For(&corev1.Pod{}).Complete(&podNameLabelReconciler{c: mgr.GetClient()}); err != nil {
		return err
	}
	go func() {
		if mgr.GetCache().WaitForCacheSync(ctx) {
			fmt.Println("synced")
		}
	}()
	return mgr.Start(ctx)
}

// podNameLabelReconciler is hookback's pod-name-label contract written
// the controller-runtime way: a pod annotated
// controller.AddPodNameLabelAnnotation="true" carries its name in
// controller.PodNameLabel; otherwise a label equal to its name goes.
type podNameLabelReconciler struct{ c client.Client }

func (r *podNameLabelReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var pod corev1.Pod
	if err := r.c.Get(ctx, req.NamespacedName, &pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	want := pod.Annotations[controllers.AddPodNameLabelAnnotation] == "true"
	has := pod.Labels[controllers.PodNameLabel] == pod.Name
	if want == has || pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if want {
		if pod.Labels == nil {
			pod.Labels = map[string]string{}
		}
		pod.Labels[controllers.PodNameLabel] = pod.Name
	} else {
		delete(pod.Labels, controllers.PodNameLabel)
	}
	return reconcile.Result{}, r.c.Patch(ctx, &pod, patch)
}
