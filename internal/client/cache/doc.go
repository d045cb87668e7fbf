// Package cache owns wharf's plugin cache: one read-only directory per
// installed plugin version under $WHARF_HOME/cache/<marketplace>/<plugin>/<version>/,
// the installed registry that points at them, seed caches consulted before
// any network fetch, leases held by running sessions, and the garbage
// collection of orphaned versions.
//
// A version directory is never updated in place. Materialize fills a
// temporary sibling (.tmp-<version>-<pid>-<random>), fsyncs every file and
// directory, verifies the content digest, makes the tree read-only and
// renames it into place; only then may the registry point to it (Put). A
// reader therefore sees either no version directory or a complete one.
// An install's fetch writes the version durable and read-only in a
// StageDir and hands it over as Request.Staged: Ensure digests it from the
// hashes taken as it was written and renames it into place, with the same
// guarantee and no second copy or pass over its files.
//
// A registry record that does not decode fails its plugin only (Scan
// reports it, List leaves it out, GC keeps the plugin's versions);
// RebuildRegistry re-derives records from the sealed version directories
// when the store is damaged (wharf doctor --repair).
//
// Writers on one home serialize on the flock'd file $WHARF_HOME/.lock
// (WithLock). Seed directories (WHARF_SEED_DIRS) are only ever read, and
// only for a version whose expected digest the seed copy has: a seed
// hit is copied into the cache rather than used in place, so that every
// installPath lives under the cache, is read-only, and is collected by the
// same rules whatever media the seed is on.
package cache
