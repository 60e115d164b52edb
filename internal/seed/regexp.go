package seed

import "regexp"

// compileRegexp is the one place ignore patterns are compiled for validation,
// with the same syntax the worker uses (Go RE2: no backtracking, so a pattern
// from a seed file cannot hang a worker).
func compileRegexp(p string) (*regexp.Regexp, error) { return regexp.Compile(p) }
