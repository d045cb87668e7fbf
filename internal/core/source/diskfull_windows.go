//go:build windows

package source

import (
	"errors"

	"golang.org/x/sys/windows"
)

// diskFull reports whether err is a full disk or an exhausted quota.
func diskFull(err error) bool {
	return errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}
