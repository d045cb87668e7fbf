//go:build !wharf_testhooks

package settings

// testHooks is false in a release build: see SystemManagedDir.
const testHooks = false
