package assembly

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hookback/hookback/builtin/controllers"
	"github.com/hookback/hookback/builtin/webhooks"
	"github.com/hookback/hookback/field"
)

// webhookOptionFields names the field of webhooks.Options each option is.
var webhookOptionFields = map[string]string{
	webhooks.OptionBannedWords:       "webhooks.Options.BannedWords",
	webhooks.OptionSidecarImage:      "webhooks.Options.SidecarImage",
	webhooks.OptionCPUOversellFactor: "webhooks.Options.CPUOversellFactor",
}

// ValidateWebhookOptions is o.Validate with each problem a field.Error
// naming its field, as the rest of Validate does; errors.As still finds
// the webhooks.OptionError.
func ValidateWebhookOptions(o webhooks.Options) error {
	err := o.Validate()
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var errs []error
	for _, e := range joined.Unwrap() {
		var oe *webhooks.OptionError
		if errors.As(e, &oe) && webhookOptionFields[oe.Option] != "" {
			e = &field.Error{Field: webhookOptionFields[oe.Option], Value: oe.Value, Detail: "want " + oe.Want, Err: e}
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
