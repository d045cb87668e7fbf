// Package install holds wharf's use cases on installed plugins: plan and
// apply install, uninstall, update, prune, enable and disable, and the status
// view behind `wharf list`.
//
// Every operation first plans without side effects (resolver closure, policy
// for every plugin of the closure), then materializes versions into the
// non-in-place cache, and only then points the installed registry at them, so
// a crash at any moment leaves either the previous state or the new one. The
// registry is written under the home's lock, after re-reading it, and the
// settings write that belongs with it (enabling an install's closure,
// enable, disable) happens under the same lock.
package install
