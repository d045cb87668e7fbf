//go:build !windows

package source

import (
	"errors"
	"syscall"
)

// diskFull reports whether err is a full disk or an exhausted quota.
func diskFull(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}
