//go:build !unix

package policy

import "errors"

func mkfifo(string) error { return errors.New("FIFOs are a Unix file type") }
