package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// sample is a value for a flag bound to p that differs from p's default.
func sample(p any) (arg string, want any) {
	switch p := p.(type) {
	case *string:
		return *p + "x", *p + "x"
	case *bool:
		return fmt.Sprint(!*p), !*p
	case *int:
		return fmt.Sprint(*p + 7), *p + 7
	case *float64:
		return fmt.Sprint(*p + 1.5), *p + 1.5
	case *time.Duration:
		return (*p + 3*time.Second).String(), *p + 3*time.Second
	case *[]string:
		return "sample-a", []string{"sample-a"}
	}
	return "", nil
}

// TestEveryFlagFillsItsField: each flag of each command, set on the command
// line, lands in the options field it is bound to; so does its
// HOOKBACK_<FLAG> variable; and a global flag after the command too.
func TestEveryFlagFillsItsField(t *testing.T) {
	for name, b := range commands(Extension{}).binders {
		for _, f := range b.flags {
			flag := f.Names()[0]
			for _, via := range []string{"argument", "environment"} {
				t.Run(name+" --"+flag+" via "+via, func(t *testing.T) {
					// A fresh command set: urfave/cli flags keep parse state.
					fresh := commands(Extension{}).binders[name]
					p := fresh.fields[flag]
					arg, want := sample(p)
					args := []string{"hookback", name}
					if via == "argument" {
						args = append(args, "--"+flag+"="+arg)
					} else {
						t.Setenv(envVar(flag)[0], arg)
					}
					app := &cli.App{Writer: io.Discard, ErrWriter: io.Discard, ExitErrHandler: func(*cli.Context, error) {},
						Commands: []*cli.Command{{Name: name, Flags: fresh.flags, Action: func(c *cli.Context) error {
							fresh.load(c)
							return nil
						}}}}
					if err := app.Run(args); err != nil {
						t.Fatal(err)
					}
					if got := reflect.ValueOf(p).Elem().Interface(); !reflect.DeepEqual(got, want) {
						t.Errorf("%s: field = %#v, want %#v", strings.Join(args, " "), got, want)
					}
				})
			}
		}
	}
}

// TestEveryCommandFlagHasACategory: --help shows flags in groups.
func TestEveryCommandFlagHasACategory(t *testing.T) {
	for name, b := range commands(Extension{}).binders {
		for _, f := range b.flags {
			if cf, ok := f.(cli.CategorizableFlag); !ok || cf.GetCategory() == "" {
				t.Errorf("%s --%s has no help category", name, f.Names()[0])
			}
		}
	}
}

// documentedDefault finds "`--flag` (VALUE)", "`--flag` (default VALUE...)"
// and "| `--flag` | VALUE |" in the docs: the defaults a reader is told.
var documentedDefault = regexp.MustCompile("`--([a-z0-9-]+)` \\((?:default )?`?([^`),; ]+(?: s)?)`?[),;]|^\\| `--([a-z0-9-]+)` \\| `?([^`| ]+)`? \\|")

// TestDocumentedDefaultsAreTheRealOnes: every default the README and docs
// state for a flag of start is the one the flag has.
func TestDocumentedDefaultsAreTheRealOnes(t *testing.T) {
	start := commands(Extension{}).binders["start"]
	defaults := map[string]string{}
	for name, p := range start.fields {
		switch p := p.(type) {
		case *string:
			defaults[name] = *p
		case *int:
			defaults[name] = fmt.Sprint(*p)
		case *float64:
			defaults[name] = fmt.Sprint(*p)
		case *time.Duration:
			defaults[name] = p.String()
		case *bool:
			defaults[name] = map[bool]string{false: "off", true: "on"}[*p]
		}
	}
	files, _ := filepath.Glob("../docs/*.md")
	checked := 0
	for _, file := range append(files, "../README.md") {
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(text), "\n") {
			for _, m := range documentedDefault.FindAllStringSubmatch(line, -1) {
				name, value := m[1]+m[3], m[2]+m[4]
				def, ok := defaults[name]
				if !ok || !looksLikeValue(value) {
					continue
				}
				checked++
				value = strings.ReplaceAll(value, " s", "s")
				if value != def && value+"0s" != def && value != strings.TrimSuffix(def, "0s") {
					t.Errorf("%s says --%s defaults to %q; it is %q", filepath.Base(file), name, value, def)
				}
			}
		}
	}
	if checked < 5 {
		t.Errorf("found only %d documented defaults: is the pattern still right?", checked)
	}
}

// looksLikeValue tells a value ("8443", "127.0.0.1:8081", "15 s") from
// prose in parentheses ("IP or DNS name", "env `HOOKBACK_X`").
func looksLikeValue(s string) bool {
	return regexp.MustCompile(`^([0-9][0-9.:]*( s|s|m)?|[0-9.]+:[0-9]+|off|on|[a-z-]+-system|default)$`).MatchString(s) && s != "default"
}

// TestExamplesParse: every --help example's flags are flags of its command
// (the e2e suite runs the examples themselves against a cluster).
func TestExamplesParse(t *testing.T) {
	for cmd, examples := range Examples() {
		for _, ex := range examples {
			line, _, _ := strings.Cut(ex.Command, "|")
			line, _, _ = strings.Cut(line, ">")
			if strings.ContainsAny(line, `"'$<`) {
				continue // shell quoting or substitution: the e2e run covers it
			}
			t.Run(ex.Command, func(t *testing.T) {
				args := append(flagsOnly(strings.Fields(line)[1:]), "--help")
				if _, _, err := run(t, args...); err != nil {
					t.Errorf("%s (command %q): %v", ex.Command, cmd, err)
				}
			})
		}
	}
}

// flagsOnly drops an example's positional arguments (a file to replay),
// which --help would take for a help topic.
func flagsOnly(args []string) []string {
	app := newApp(Extension{}, io.Discard, io.Discard)
	out := []string{}
	var cmd *cli.Command
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case cmd == nil && app.Command(a) != nil:
			cmd = app.Command(a)
			out = append(out, a)
		case cmd != nil && cmd.Command(a) != nil && !strings.HasPrefix(a, "-"):
			cmd = cmd.Command(a) // a subcommand: test init
			out = append(out, a)
		case strings.HasPrefix(a, "-") && len(a) > 1:
			out = append(out, a)
			if cmd != nil && !strings.Contains(a, "=") && takesValue(cmd, strings.TrimLeft(a, "-")) && i+1 < len(args) {
				i++
				out = append(out, args[i])
			}
		case cmd == nil:
			out = append(out, a)
		}
	}
	return out
}
