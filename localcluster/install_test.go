package localcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestInstallDirIsAtomic(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "envtest-v1-linux-amd64")
	boom := errors.New("boom")
	tests := []struct {
		name          string
		fill          func(tmp string) error
		wantErr       error
		wantInstalled bool
		wantDir       bool
	}{
		{name: "a fill that fails halfway leaves nothing", fill: func(tmp string) error {
			if err := os.WriteFile(filepath.Join(tmp, "etcd"), []byte("half"), 0o755); err != nil {
				return err
			}
			return boom
		}, wantErr: boom},
		{name: "a fill that succeeds is renamed into place", fill: func(tmp string) error {
			return os.WriteFile(filepath.Join(tmp, "etcd"), []byte("whole"), 0o755)
		}, wantInstalled: true, wantDir: true},
		{name: "an installed dir is reused without a fill", fill: func(string) error {
			t.Error("fill called for an installed dir")
			return nil
		}, wantDir: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			installed, err := installDir(context.Background(), dir, tc.fill)
			if !errors.Is(err, tc.wantErr) || installed != tc.wantInstalled {
				t.Fatalf("installDir = %v, %v; want %v, %v", installed, err, tc.wantInstalled, tc.wantErr)
			}
			_, statErr := os.Stat(filepath.Join(dir, "etcd"))
			if (statErr == nil) != tc.wantDir {
				t.Errorf("etcd installed: %v, want %v", statErr == nil, tc.wantDir)
			}
			entries, _ := os.ReadDir(parent)
			for _, e := range entries {
				if strings.Contains(e.Name(), ".tmp-") {
					t.Errorf("temporary directory %s left behind", e.Name())
				}
			}
		})
	}
}

func TestKwokctlConfig(t *testing.T) {
	full := Binaries{Etcd: "/b/etcd", KubeAPIServer: "/b/kube-apiserver", Kubectl: "/b/kubectl", Kwok: "/b/kwok", Kwokctl: "/b/kwokctl",
		KubeControllerManager: "/b/kube-controller-manager", KubeScheduler: "/b/kube-scheduler"}
	bare := full
	bare.KubeControllerManager, bare.KubeScheduler = "", ""
	tests := []struct {
		name          string
		b             Binaries
		want, notWant []string
	}{
		{name: "with controllers", b: full,
			want: []string{"kubeControllerManagerBinary: /b/kube-controller-manager", "key: leader-elect", "enable-aggregator-routing",
				"- PortForward", "bindAddress: 127.0.0.1", "kubeAuditPolicy: /a/audit-policy.yaml", "kubeAuthorization: true", "kubeAdmission: true", "runtime: binary"},
			notWant: []string{"disable:"}},
		{name: "without controllers", b: bare,
			want:    []string{"disable:\n  - kube-controller-manager\n  - kube-scheduler", "enable-aggregator-routing", "- PortForward"},
			notWant: []string{"leader-elect", "kubeControllerManagerBinary"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := renderKwokctlConfig(configData{KubeVersion: "v1.36.3", KwokVersion: "v0.8.0", CacheDir: "/c", AuditPolicy: "/a/audit-policy.yaml", B: tc.b})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("config lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(string(out), w) {
					t.Errorf("config has %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestBuildModulePinsTheVersions: the embedded build module, hookback's
// client-go and hack/cluster/lib.sh agree with the defaults.
func TestBuildModulePinsTheVersions(t *testing.T) {
	mod, err := buildModule.ReadFile("buildmod/go.mod.in")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"k8s.io/kubernetes " + DefaultKubeVersion, "go.etcd.io/etcd/server/v3 " + SourceEtcdVersion, "sigs.k8s.io/kwok " + DefaultKwokVersion} {
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(want) + `$`).Match(mod) {
			t.Errorf("buildmod/go.mod.in does not require %q", want)
		}
	}
	root, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	clientGo := "k8s.io/client-go v0" + strings.TrimPrefix(DefaultKubeVersion, "v1")
	if !strings.Contains(string(root), clientGo) {
		t.Errorf("go.mod does not require %s: DefaultKubeVersion %s is not the release client-go matches", clientGo, DefaultKubeVersion)
	}
	lib, err := os.ReadFile("../hack/cluster/lib.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"K8S_VERSION=" + DefaultKubeVersion, "ETCD_VERSION=" + SourceEtcdVersion, "KWOK_VERSION=" + DefaultKwokVersion} {
		if !strings.Contains(string(lib), want+"\n") {
			t.Errorf("hack/cluster/lib.sh does not set %s", want)
		}
	}
}

func TestWriteBuildModule(t *testing.T) {
	dir := t.TempDir()
	if err := writeBuildModule(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "go.sum", "tools.go", "cmd/etcd/main.go"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if !strings.Contains((&GoBuilder{}).ldflags(), "k8s.io/component-base/version.gitVersion="+DefaultKubeVersion) {
		t.Error("ldflags do not stamp the Kubernetes version")
	}
}

// TestBuildModuleSharesHookbacksVersions: a module both hookback and the
// control plane's build need is never older in the build module, and the
// staging modules hookback uses are required at their release, not
// replaced; otherwise the packages both compile (client-go, k8s.io/api)
// are compiled twice on a fresh machine (see go.mod.in).
func TestBuildModuleSharesHookbacksVersions(t *testing.T) {
	mod, err := buildModule.ReadFile("buildmod/go.mod.in")
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	build, ours := requires(string(mod)), requires(string(root))
	for path, v := range ours {
		if bv, ok := build[path]; ok && older(t, bv, v) {
			t.Errorf("buildmod/go.mod.in requires %s %s, older than hookback's %s: raise it (go get %s@%s in the written module)", path, bv, v, path, v)
		}
	}
	for _, staging := range []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiserver", "k8s.io/client-go", "k8s.io/component-base", "k8s.io/apiextensions-apiserver"} {
		if regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(staging) + ` =>`).Match(mod) {
			t.Errorf("buildmod/go.mod.in replaces %s: require it at its release instead", staging)
		}
		if build[staging] != ours[staging] {
			t.Errorf("buildmod/go.mod.in requires %s %q, hookback %q", staging, build[staging], ours[staging])
		}
	}
}

// requires reads the require lines of a go.mod: module path to version.
func requires(gomod string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(?:require\s+|\t)([^\s/]+\.[^\s]+)\s+(v[^\s]+)`).FindAllStringSubmatch(gomod, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// older reports whether module version a precedes b.
func older(t *testing.T, a, b string) bool {
	t.Helper()
	va, err := utilversion.ParseSemantic(a)
	if err != nil {
		t.Fatalf("version %q: %v", a, err)
	}
	vb, err := utilversion.ParseSemantic(b)
	if err != nil {
		t.Fatalf("version %q: %v", b, err)
	}
	return va.LessThan(vb)
}
