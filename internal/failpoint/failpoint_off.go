//go:build !failpoints

package failpoint

// Enabled says whether the binary was built with the failpoints tag.
const Enabled = false

// Hit does nothing: no point is armed without the failpoints tag.
func Hit(string) error { return nil }
