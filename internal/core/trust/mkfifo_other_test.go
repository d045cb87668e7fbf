//go:build !unix

package trust

import "errors"

func mkfifo(string) error { return errors.New("FIFOs are a Unix file type") }
