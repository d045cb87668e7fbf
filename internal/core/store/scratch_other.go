//go:build !linux

package store

// scratchFile returns the path of an empty file that Salvage copies a
// store into, in the system's temporary directory (never next to the
// store: reading a store writes nothing to its home). cleanup removes it.
func scratchFile() (path string, cleanup func(), err error) { return tempScratch() }
