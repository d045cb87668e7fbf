package api

import (
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/channel"
	"github.com/wharfhq/wharf/plugin"
)

// servedDigests adds to known the digests this server's channels serve or
// served for plugin id, with their versions: every build of every channel
// whose entry is the plugin, by its origin (name@marketplace) or by its
// name in the channel (name@channel, as a machine that installed it from
// the channel reports it). A digest the server put in a channel is not
// unknown.
func (s *Server) servedDigests(id string, known map[string]string) error {
	pid, err := plugin.ParseID(id)
	if err != nil {
		return nil
	}
	return s.deps.Store.View(func(r store.Reader) error {
		defs, err := channel.List(r)
		if err != nil {
			return err
		}
		for _, d := range defs {
			builds, err := channel.Builds(r, d.Name)
			if err != nil {
				return err
			}
			if h, ok, err := channel.ReadHead(r, d.Name); err != nil {
				return err
			} else if ok {
				builds = append(builds, h)
			}
			for _, h := range builds {
				for _, e := range h.Plan.Entries {
					if e.Origin != id && (d.Name != pid.Source || e.Name != pid.Name) {
						continue
					}
					for _, dg := range []string{e.Digest, e.OriginDigest} {
						if dg != "" {
							if _, ok := known[dg]; !ok {
								known[dg] = e.Version
							}
						}
					}
				}
			}
		}
		return nil
	})
}
