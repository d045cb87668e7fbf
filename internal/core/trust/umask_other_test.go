//go:build !unix

package trust

// umask does nothing: Windows has no file mode creation mask, so there the
// umask variants of a test differ only in how they build the tree.
func umask(int) int { return 0 }
