package lint

import "testing"

func TestOwnPods(t *testing.T) {
	in, err := Read(load(t, "self-deadlock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pods := in.OwnPods()
	if len(pods) != 1 || pods[0].Workload != "Deployment/controller-manager" || pods[0].Namespace != "system" {
		t.Fatalf("OwnPods() = %+v, want the controller-manager Deployment's pod in system", pods)
	}
	md, _ := pods[0].Pod["metadata"].(map[string]any)
	if md["namespace"] != "system" || md["labels"] == nil || pods[0].Pod["spec"] == nil {
		t.Errorf("pod %v: want the template's labels and spec, in system", pods[0].Pod)
	}
}
