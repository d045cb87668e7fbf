package policy

import (
	"os"
	"runtime/debug"
	"strconv"
	"sync"
)

// CodeStamp names the build of wharf that makes decisions: the Go version,
// the main module's version and VCS revision, and the running executable's
// size and modification time. A decision depends on the Go code that
// computes input.facts as well as on the policy's inputs, so a memo of
// decisions is only reused by the build that made it; a rebuilt or upgraded
// wharf starts a new one.
var CodeStamp = sync.OnceValue(func() string {
	s := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		s = bi.GoVersion + " " + bi.Main.Path + "@" + bi.Main.Version
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision", "vcs.modified":
				s += " " + kv.Key + "=" + kv.Value
			}
		}
	}
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			s += " exe=" + strconv.FormatInt(fi.Size(), 10) + "/" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
		}
	}
	return s
})
