package suite

import _ "embed"

// Schema is the JSON Schema of suite files (suite/schema.json), for
// editors: a YAML language server validates and completes cases with it.
//
//go:embed schema.json
var Schema []byte
