//go:build !slow

package testutil

const slowTests = false
