//go:build windows

package source

import "golang.org/x/sys/windows"

// diskFullCauses are the errors a full disk or quota gives on this system.
var diskFullCauses = []error{windows.ERROR_DISK_FULL, windows.ERROR_HANDLE_DISK_FULL}
