// Package api holds the OpenAPI 3 documents of ipatlas's HTTP APIs: the
// public API (openapi.yaml) and the admin API of the admin listener
// (admin-openapi.yaml). They are embedded so that the server can serve them
// and its tests can validate real responses against them.
package api

import _ "embed"

// OpenAPI is the OpenAPI 3 document of the public API.
//
//go:embed openapi.yaml
var OpenAPI []byte

// AdminOpenAPI is the OpenAPI 3 document of the admin listener.
//
//go:embed admin-openapi.yaml
var AdminOpenAPI []byte
