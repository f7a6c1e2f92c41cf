package cli

import (
	"log/slog"
	"net/http"

	"github.com/hookback/hookback/conversion"
	"github.com/hookback/hookback/upstream"
)

// conversionTarget replays a recorded ConversionReview to the upstream,
// through the transport and checks hookback serves it with.
func conversionTarget(opts upstream.Options, crd, path, upstreamPath string, log *slog.Logger) (http.Handler, error) {
	conv, err := upstream.NewConverter(opts, upstreamPath)
	if err != nil {
		return nil, err
	}
	return conversion.NewHTTPHandler(conversion.Webhook{CRD: crd, Path: path, Converter: conv}, conversion.Options{Log: log}), nil
}
