package settings

import "runtime"

// SystemManagedDir is the system's managed settings directory, where an
// administrator puts the policy every user of the machine gets. It is the
// same on every run: neither the environment nor a flag moves it, so a user
// cannot drop it (WHARF_MANAGED_DIR and --managed-dir only add a directory
// read after it). Like Claude Code's managed settings:
//
//	Linux and others  /etc/wharf
//	macOS             /Library/Application Support/wharf
//	Windows           C:\Program Files\wharf
//
// Tests of packages that run wharf point it at a temporary directory; it is
// a variable for that reason only.
var SystemManagedDir = systemManagedDir(runtime.GOOS)

func systemManagedDir(goos string) string {
	switch goos {
	case "darwin", "ios":
		return "/Library/Application Support/wharf"
	case "windows":
		return `C:\Program Files\wharf`
	}
	return DefaultManagedDir
}
