// Package settings reads wharf's scoped settings files (user, project, local,
// managed with its managed-settings.d fragments, and the in-memory flag scope),
// decodes them strictly, merges them by precedence
// (managed > flag > local > project > user) and hashes every input document
// into a Snapshot whose Hash is a cache key. SetEnabled rewrites one scope's
// file crash-safely for `wharf enable` / `wharf disable`, reading it under
// the exclusive lock of its directory so that parallel writers never lose
// each other's keys.
//
// Decoding is strict: a value of the wrong type is an Issue naming the file,
// line and field path; unknown keys are warnings. A security key whose value
// is invalid is kept as "invalid" (never silently dropped) so that policy can
// fail closed.
//
// The managed scope is the fixed system directory (SystemManagedDir), then
// the directory WHARF_MANAGED_DIR adds after it; a managed file that exists
// but is not a readable regular file fails closed (TypeManagedUnreadable),
// and nothing is opened in a way that could block.
//
// Viper resolves the environment (WHARF_HOME, WHARF_MANAGED_DIR); the files
// themselves are decoded with encoding/json because viper folds key case
// ("deploy@Corp", "enabledPlugins") and loses the positions needed to report
// a bad field with its file and line.
package settings
