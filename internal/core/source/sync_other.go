//go:build !linux

package source

import "errors"

// syncAllChosen: only Linux has syncfs; elsewhere each file is synced.
func (d *dirFS) syncAllChosen(SyncMode) bool { return false }

// syncAll: there is no syncfs to call.
func (d *dirFS) syncAll() error { return errors.ErrUnsupported }
