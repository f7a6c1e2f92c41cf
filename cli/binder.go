package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
)

// Help categories: every flag of every command is in one, so --help reads
// as groups rather than one list of forty.
const (
	catGlobal    = "global"
	catCluster   = "cluster"
	catServing   = "serving"
	catUser      = "your webhook"
	catBuiltins  = "built-ins"
	catScope     = "scope"
	catInspector = "inspector"
	catTunnel    = "tunnel"
	catInCluster = "in cluster"
	catLoad      = "load"
	catOutput    = "output"
	catCRD       = "CRDs"
)

// binder declares a command's flags, each bound to one field of the
// command's options struct: the field's value when bind is called is the
// flag's default, and load copies what the user set (on the command line,
// before or after the command, or through HOOKBACK_<FLAG>) into the field.
// Adding a flag is adding a field and one bind call next to it.
type binder struct {
	flags []cli.Flag
	loads []func(*cli.Context)
	// fields maps each flag name to the pointer it fills, for the test that
	// proves every flag reaches a field.
	fields map[string]any
	// libraryFields maps the library field each flag sets (sets), as
	// field.Error names it, to the flag: the CLI shows the library's errors
	// with flag names (fielderrors.go).
	libraryFields map[string]string
}

// declared is a flag as it is declared, for a flagOption to adjust.
type declared struct {
	flag cli.Flag
	// sets are the library fields the flag's value ends up in (sets).
	sets []string
}

// flagOption adjusts a flag as it is declared.
type flagOption func(*declared)

// sets says which library fields the flag's value ends up in, as the
// library's field.Error names them ("plan.Options.Port",
// "certs.Options.Mode"; more than one where the library passes the value
// on, as --upstream-insecure's reaches upstream.Options.Insecure), when the
// library validates it: its errors then name the flag in the CLI. A test
// proves every name the library returns is set by a flag
// (fielderrors_test.go).
func sets(libraryFields ...string) flagOption {
	return func(d *declared) { d.sets = append(d.sets, libraryFields...) }
}

// alias adds short names, such as -n.
func alias(names ...string) flagOption {
	return func(d *declared) {
		switch f := d.flag.(type) {
		case *cli.StringSliceFlag:
			f.Aliases = append(f.Aliases, names...)
		case *cli.StringFlag:
			f.Aliases = append(f.Aliases, names...)
		}
	}
}

// hidden keeps a flag out of --help (test and tuning knobs).
func hidden(d *declared) {
	switch f := d.flag.(type) {
	case *cli.DurationFlag:
		f.Hidden = true
	case *cli.StringFlag:
		f.Hidden = true
	case *cli.BoolFlag:
		f.Hidden = true
	}
}

// bind declares flag name bound to *p, with p's current value as default.
// T is string, bool, int, float64, time.Duration or []string.
func bind[T any](b *binder, p *T, name, category, usage string, opts ...flagOption) {
	env := envVar(name)
	var f cli.Flag
	var load func(c *cli.Context)
	switch p := any(p).(type) {
	case *string:
		f = &cli.StringFlag{Name: name, Category: category, Usage: usage, EnvVars: env, Value: *p}
		load = func(c *cli.Context) { *p = lookup(c, name).String(name) }
	case *bool:
		f = &cli.BoolFlag{Name: name, Category: category, Usage: usage, EnvVars: env, Value: *p}
		load = func(c *cli.Context) { *p = lookup(c, name).Bool(name) }
	case *int:
		f = &cli.IntFlag{Name: name, Category: category, Usage: usage, EnvVars: env, Value: *p}
		load = func(c *cli.Context) { *p = lookup(c, name).Int(name) }
	case *float64:
		f = &cli.Float64Flag{Name: name, Category: category, Usage: usage, EnvVars: env, Value: *p}
		load = func(c *cli.Context) { *p = lookup(c, name).Float64(name) }
	case *time.Duration:
		f = &cli.DurationFlag{Name: name, Category: category, Usage: usage, EnvVars: env, Value: *p}
		load = func(c *cli.Context) { *p = lookup(c, name).Duration(name) }
	case *[]string:
		var def *cli.StringSlice
		if len(*p) > 0 {
			def = cli.NewStringSlice(*p...)
		}
		f = &cli.StringSliceFlag{Name: name, Category: category, Usage: usage, EnvVars: env, Value: def}
		load = func(c *cli.Context) { *p = lookup(c, name).StringSlice(name) }
	default:
		// A programming error caught by every test that builds the app.
		f = &cli.StringFlag{Name: name, Usage: fmt.Sprintf("BUG: flag %s bound to unsupported %T", name, p)}
		load = func(*cli.Context) {}
	}
	d := declared{flag: f}
	for _, o := range opts {
		o(&d)
	}
	if b.fields == nil {
		b.fields, b.libraryFields = map[string]any{}, map[string]string{}
	}
	b.fields[name] = p
	for _, f := range d.sets {
		b.libraryFields[f] = name
	}
	b.flags = append(b.flags, f)
	b.loads = append(b.loads, load)
}

// load fills every bound field from c.
func (b *binder) load(c *cli.Context) {
	for _, l := range b.loads {
		l(c)
	}
}

// envVar names the environment variable that backs a flag.
func envVar(flag string) []string {
	return []string{"HOOKBACK_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
}

// lookup finds the context in c's lineage where name was set (the
// subcommand's flags first, then the app's global ones), else c itself,
// whose value is the default.
func lookup(c *cli.Context, name string) *cli.Context {
	for _, cc := range c.Lineage() {
		if cc.Command != nil || cc.App != nil {
			if cc.IsSet(name) {
				return cc
			}
		}
	}
	return c
}
