package install

import (
	"context"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// SetEnabled writes enabledPlugins[id] in scope's settings file, after policy
// allowed it (a plugin forced on cannot be disabled; one forced off cannot be
// enabled). It returns the file written. The change takes effect at the
// agent's next reload.
func (in *Installer) SetEnabled(ctx context.Context, id plugin.ID, scope settings.Scope, on bool) (string, error) {
	if in.o.Policy != nil {
		var err error
		if on {
			g, _, gerr := in.graph()
			if gerr != nil {
				return "", gerr
			}
			err = in.o.Policy.AllowEnable(ctx, id, marketSourceOf(g, id.Source))
		} else {
			err = in.o.Policy.AllowDisable(ctx, id)
		}
		if err != nil {
			return "", err
		}
	}
	if scope == "" {
		scope = settings.ScopeUser
	}
	// Under the home's lock, like the settings write of an install, so the
	// two are ordered the same way in every process.
	var file string
	err := in.o.Cache.WithLock(ctx, func(context.Context) error {
		var err error
		file, err = settings.SetEnabled(in.o.Settings, scope, id, on)
		return err
	})
	return file, err
}
