package cli

import (
	"log/slog"
	"strings"
	"sync"

	"github.com/hookback/hookback/field"
)

// The library's errors name the fields of its Options (field.Error); the
// CLI shows each with the flag that sets the field, so a user reads
// "--port 0: want a TCP port, 1 to 65535". The map is what the commands'
// bind calls declare (sets), built once from every command's binder: a
// flag and the library field it fills are named in one place. The CLI's
// options structs keep flags in their own shape (ServeOptions.TLSMode
// becomes certs.Options.Mode in config), so reflection over them could not
// find the library's field; the bind call says it, and
// TestSetsNamesRealFieldsOnce and TestEveryLibraryFieldErrorNamesABoundFlag
// prove each name real and each one the library returns bound.
var (
	fieldFlagsOnce sync.Once
	fieldFlags     map[string]string
)

// libraryFieldFlags maps a library field to the flag that sets it.
func libraryFieldFlags() map[string]string {
	fieldFlagsOnce.Do(func() {
		fieldFlags = map[string]string{}
		for _, b := range commands(Extension{}).binders {
			for f, flag := range b.libraryFields {
				fieldFlags[f] = flag
			}
		}
	})
	return fieldFlags
}

// flagName is the flag that sets a library field, "--port"; a field no flag
// sets keeps its name.
func flagName(libraryField string) string {
	if flag, ok := libraryFieldFlags()[libraryField]; ok {
		return "--" + flag
	}
	return libraryField
}

// flagError is an error from the library shown with flag names; errors.Is
// and errors.As still see the library's error.
type flagError struct {
	msg string
	err error
}

func (e *flagError) Error() string { return e.msg }
func (e *flagError) Unwrap() error { return e.err }

// withFlagNames returns err with every field.Error in it shown with flag
// names, or err itself when it holds none.
func withFlagNames(err error) error {
	fes := field.All(err)
	if len(fes) == 0 {
		return err
	}
	msg := err.Error()
	// Outermost first: an inner error's text is part of the outer's Detail
	// and is replaced after it.
	for _, fe := range fes {
		msg = strings.ReplaceAll(msg, fe.Error(), fe.Text(flagName))
	}
	return &flagError{msg: msg, err: err}
}

// flagNamesInErrors is the logger's ReplaceAttr: an error logged from the
// library (a certificate reload, a tunnel that attaches again) reads with
// flag names too, as the errors the CLI prints do.
func flagNamesInErrors(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() != slog.KindAny {
		return a
	}
	if err, ok := a.Value.Any().(error); ok && len(field.All(err)) > 0 {
		a.Value = slog.StringValue(withFlagNames(err).Error())
	}
	return a
}
