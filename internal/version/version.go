// Package version says which freshcrawl this binary is.
package version

import (
	"runtime/debug"
	"strings"
)

// version is set at link time by release builds:
//
//	go build -ldflags "-X github.com/freshcrawl/freshcrawl/internal/version.version=v1.2.3" ./cmd/freshcrawl
//
// It is a variable only because the linker can set nothing else; nothing
// assigns it at run time.
var version = ""

// String is the version: the one set at link time, else what the Go
// toolchain recorded (the module version of `go install …@v1.2.3`, or the
// VCS revision of a build from a checkout, "+dirty" when it had local
// changes), else "devel".
func String() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		return "devel-" + shortRev(rev) + dirty
	}
	return "devel"
}

func shortRev(rev string) string {
	rev = strings.TrimSpace(rev)
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
