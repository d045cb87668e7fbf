//go:build !unix

package cache

import "errors"

func mkfifo(string) error { return errors.New("FIFOs are a Unix file type") }
