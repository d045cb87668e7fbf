//go:build !unix

package capability

// readFile is readFilePlain where there are no unix system calls.
func readFile(name string, max int64, alloc func(int) []byte) fileText {
	return readFilePlain(name, max, alloc)
}
