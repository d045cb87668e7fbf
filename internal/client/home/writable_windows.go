//go:build windows

package home

import "os"

// writable reports whether path may be written. Windows keeps no Unix
// mode: Go reports a file or directory with the read-only attribute
// without its write bits.
func writable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().Perm()&0o200 != 0
}
