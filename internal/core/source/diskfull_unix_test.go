//go:build !windows

package source

import "syscall"

// diskFullCauses are the errors a full disk or quota gives on this system.
var diskFullCauses = []error{syscall.ENOSPC, syscall.EDQUOT}
