//go:build slow

package testutil

const slowTests = true
