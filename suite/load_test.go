package suite

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadNamesFileAndLine(t *testing.T) {
	for _, tc := range []struct {
		file, want string
	}{
		{"unknown-field.yaml", `unknown-field.yaml:10: unknown field "objekt"`},
		{"update-without-old.yaml", "update-without-old.yaml:3: UPDATE needs oldObject or oldObjectFile"},
		{"bad-result.yaml", `bad-result.yaml:6: expect.result "permitted": want one of allowed, denied`},
		{"wrong-type.yaml", "wrong-type.yaml:9: expect.code: want int32, not string"},
		{"two-inputs.yaml", "two-inputs.yaml:1: case \"two-inputs\" has more than one input"},
		{"bad-kind.yaml", `bad-kind.yaml:6: configurationKind "Mutating": want one of MutatingWebhookConfiguration, ValidatingWebhookConfiguration`},
		{"kind-without-webhooks.yaml", `kind-without-webhooks.yaml:4: case "kind-alone": configurationKind and path say which of the webhooks it names it means: give webhooks too`},
	} {
		t.Run(tc.file, func(t *testing.T) {
			_, err := Load([]string{filepath.Join("testdata", "bad", tc.file)})
			if !errors.Is(err, ErrSuite) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrSuite containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadDirectorySkipsOtherYAML(t *testing.T) {
	files, err := Load([]string{filepath.Join("..", "testdata", "suite")})
	if err != nil {
		t.Fatal(err)
	}
	// pod-offensive.yaml is a manifest the cases name, not a suite file.
	if len(files) != 1 || len(files[0].Cases) != 4 {
		t.Fatalf("files = %d, want builtins.yaml alone with its 4 cases", len(files))
	}
	if c := files[0].Cases[1]; c.Name != "lifespan-tolerations" || c.Line != 16 {
		t.Errorf("case 2 = %s at line %d", c.Name, c.Line)
	}
}

func TestLoadNoSuite(t *testing.T) {
	_, err := Load([]string{t.TempDir()})
	if !errors.Is(err, ErrSuite) || !strings.Contains(err.Error(), "no suite files") {
		t.Errorf("err = %v", err)
	}
}
