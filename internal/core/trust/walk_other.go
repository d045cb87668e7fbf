//go:build !linux

package trust

// walkAt: see walk_linux.go; here every walk goes by path.
var walkAt = false

// walkTree lists the entries below root into w.
func (w *walked) walkTree(root string) error { return w.dir(root, "") }
