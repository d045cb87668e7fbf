//go:build !unix

package source

import "errors"

// mkfifo: this system has no named pipes in its file system.
func mkfifo(string) error { return errors.ErrUnsupported }
