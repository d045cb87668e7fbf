//go:build wharf_testhooks

package settings

// Built only with -tags wharf_testhooks, which wharf's own tests use to
// build the binaries they run: the system managed directory is then
// WHARF_TEST_SYSTEM_MANAGED_DIR (see SystemManagedDir). A release build has
// no way to move it.
const testHooks = true
