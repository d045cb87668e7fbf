//go:build unix

package atomicfile

import "golang.org/x/sys/unix"

// ReadlinkAt is os.Readlink of name in the directory dirfd, for the walks
// and copies that go through directory descriptors.
func ReadlinkAt(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		b := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, b)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(b[:n]), nil
		}
	}
}
