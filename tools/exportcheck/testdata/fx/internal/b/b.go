// Package b is a fixture.
package b

// B is used by cmd/fx.
const B = 1
