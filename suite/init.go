package suite

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/hookback/hookback/admission"
	"github.com/hookback/hookback/record"
)

// CaseFile is one case file `test init` or the inspector writes.
type CaseFile struct {
	// Name is the file's name: webhook_resource_name_operation.yaml.
	Name string
	Body []byte
	// key identifies the review, uid aside, for de-duplication.
	key string
}

// CaseFromEntry turns a recorded review and its answer into a case whose
// expectations are the recorded answer. The review stays as recorded
// (Secrets' data already redacted).
func CaseFromEntry(e record.Entry) (CaseFile, error) {
	if len(e.Answer) == 0 || string(bytes.TrimSpace(e.Answer)) == "null" {
		return CaseFile{}, fmt.Errorf("no answer was recorded (the call failed or came too late): nothing to expect")
	}
	conv := isConversionReview(e.Review)
	var obj []byte
	resource, name, op := "conversion", "", "convert"
	if !conv {
		r, err := admission.NewRequest(e.Review)
		if err != nil {
			return CaseFile{}, err
		}
		obj, resource, name, op = r.Object.Raw, r.Resource.Resource, r.Name, strings.ToLower(string(r.Operation))
		if r.SubResource != "" {
			resource += "-" + r.SubResource
		}
		if name == "" {
			name = generateName(obj)
		}
	}
	got, err := recordedOutcome(e.Answer, obj)
	if err != nil {
		return CaseFile{}, err
	}
	fileName := strings.Join([]string{part(e.Webhook), part(resource), part(name), part(op)}, "_")
	c := Case{Name: fileName, Review: withoutUID(e.Review), Expect: ExpectOf(got)}
	if !conv {
		c.Webhooks, c.ConfigurationKind, c.Path = []string{e.Webhook}, e.ConfigurationKind, e.Path
	}
	body, err := caseYAML(c)
	if err != nil {
		return CaseFile{}, err
	}
	sum := sha256.Sum256(append([]byte(e.Webhook+"\x00"+e.ConfigurationKind+"\x00"+e.Path+"\x00"), c.Review...))
	return CaseFile{Name: fileName + ".yaml", Body: body, key: fmt.Sprintf("%x", sum)}, nil
}

// withoutUID drops the request's uid: each run sends a fresh one, and two
// reviews of the same object are then one case.
func withoutUID(review []byte) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(review, &m) != nil {
		return review
	}
	if req, ok := m["request"].(map[string]any); ok {
		req["uid"] = "00000000-0000-0000-0000-000000000000"
	}
	b, err := json.Marshal(m)
	if err != nil {
		return review
	}
	return b
}

func generateName(obj []byte) string {
	var m struct {
		Metadata struct {
			GenerateName string `json:"generateName"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(obj, &m)
	return m.Metadata.GenerateName
}

var unsafePart = regexp.MustCompile(`[^a-z0-9.-]+`)

func part(s string) string {
	s = strings.Trim(unsafePart.ReplaceAllString(strings.ToLower(s), "-"), "-.")
	if len(s) > 48 {
		s = s[:48]
	}
	if s == "" {
		return "-"
	}
	return s
}

// caseYAML writes a Case file, its fields in a reader's order.
func caseYAML(c Case) ([]byte, error) {
	return caseYAMLWith("# A hookback test case (docs/testing.md): the review as the apiserver sent it,\n# and what the webhook answered then.\n", c)
}

// caseYAMLWith writes a Case file under header (comment lines).
func caseYAMLWith(header string, c Case) ([]byte, error) {
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "%sapiVersion: %s\nkind: %s\nname: %s\n", header, APIVersion, KindCase, c.Name)
	for _, f := range []struct {
		key string
		v   any
		set bool
	}{{"webhooks", c.Webhooks, len(c.Webhooks) > 0}, {"configurationKind", c.ConfigurationKind, c.ConfigurationKind != ""},
		{"path", c.Path, c.Path != ""}, {"review", c.Review, len(c.Review) > 0},
		{"operation", c.Operation, c.Operation != ""}, {"namespace", c.Namespace, c.Namespace != ""},
		{"object", c.Object, len(c.Object) > 0}, {"expect", c.Expect, true}} {
		if !f.set {
			continue
		}
		b, err := yaml.Marshal(map[string]any{f.key: f.v})
		if err != nil {
			return nil, err
		}
		buf.Write(b)
	}
	return buf.Bytes(), nil
}

// InitReport is what Init did.
type InitReport struct {
	Written, Duplicates int
	// Skipped names the recordings that gave no case, and why.
	Skipped []string
}

// Init writes one case file per distinct review of the recordings into
// dir (created 0700, as the recordings may hold what a review carries);
// a file already there is not overwritten.
func Init(entries []record.NamedEntry, dir string, w io.Writer) (InitReport, error) {
	var rep InitReport
	var files []CaseFile
	for _, e := range entries {
		cf, err := CaseFromEntry(e.Entry)
		if err != nil {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %v", e.File, err))
			continue
		}
		files = append(files, cf)
	}
	written, err := writeCases(files, dir, w, &rep)
	rep.Written = written
	return rep, err
}

// writeCases writes each distinct case file into dir (made 0700), a name
// taken twice numbered, and never overwrites one; duplicates are counted
// in rep.
func writeCases(files []CaseFile, dir string, w io.Writer, rep *InitReport) (int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("create %s: %w", dir, err)
	}
	written := 0
	seen, names := map[string]bool{}, map[string]int{}
	for _, cf := range files {
		if seen[cf.key] {
			rep.Duplicates++
			continue
		}
		seen[cf.key] = true
		name := cf.Name
		if n := names[name]; n > 0 {
			name = strings.TrimSuffix(name, ".yaml") + fmt.Sprintf("-%d.yaml", n+1)
			cf.Body = bytes.Replace(cf.Body, []byte("name: "+strings.TrimSuffix(cf.Name, ".yaml")+"\n"), []byte("name: "+strings.TrimSuffix(name, ".yaml")+"\n"), 1)
		}
		names[cf.Name]++
		path := filepath.Join(dir, name)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return written, fmt.Errorf("write case: %w (test init never overwrites a case)", err)
		}
		_, err = f.Write(cf.Body)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return written, fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintf(w, "wrote %s\n", path)
		written++
	}
	return written, nil
}
