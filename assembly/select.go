package assembly

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
)

// webhookOptionFlags spells each webhook option as the flag that sets it.
var webhookOptionFlags = map[string]string{
	webhooks.OptionBannedWords:       "--banned-words",
	webhooks.OptionSidecarImage:      "--sidecar-image",
	webhooks.OptionCPUOversellFactor: "--cpu-oversell-factor",
}

// ValidateWebhookOptions is o.Validate with each problem naming its flag,
// as the rest of Validate does.
func ValidateWebhookOptions(o webhooks.Options) error {
	err := o.Validate()
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var errs []error
	for _, e := range joined.Unwrap() {
		var oe *webhooks.OptionError
		if errors.As(e, &oe) && webhookOptionFlags[oe.Option] != "" {
			e = fmt.Errorf("%s %s: want %s", webhookOptionFlags[oe.Option], oe.Value, oe.Want)
		}
		errs = append(errs, e)
	}
	return errors.Join(errs...)
}

// Select resolves a --webhooks or --controllers list: names trimmed and
// lower-cased, blanks dropped, "none" alone selects nothing, "all" every one
// of valid; an unknown name is an error that lists the valid ones.
func Select(list []string, valid []string, what string) ([]string, error) {
	var out []string
	for _, s := range list {
		switch s = strings.ToLower(strings.TrimSpace(s)); s {
		case "", "none":
		case "all":
			return slices.Clone(valid), nil
		default:
			if !slices.Contains(valid, s) {
				return nil, fmt.Errorf("unknown %s %q: valid ones are %s, or all or none", what, s, strings.Join(valid, ", "))
			}
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// SelectWebhooks and SelectControllers are Select over the built-ins.
func SelectWebhooks(list []string) ([]string, error) {
	return Select(list, webhooks.Names(), "webhook")
}

// SelectControllers is Select over the built-in controllers.
func SelectControllers(list []string) ([]string, error) {
	return Select(list, controllers.Names(), "controller")
}
