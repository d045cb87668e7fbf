package web

import "time"

// Page names of the channels.
const (
	PageChannels = "channels"
	PageChannel  = "channel"
)

// ChannelRow is one channel in the list.
type ChannelRow struct {
	Name, Description, URL, Commit string
	Plugins                        int
	Updated                        time.Time
	Public                         bool
	Page                           string // the console page of the channel
	Error                          string // why it could not be built now
}

// ChannelsView is the list of channels.
type ChannelsView struct {
	Layout
	Channels []ChannelRow
	// NextURL is the following page; empty on the last.
	NextURL string
}

// ChannelEntryRow is one plugin of a channel.
type ChannelEntryRow struct {
	Name, Origin, OriginURL, Version, Digest, Source, Commit string
	Dependencies                                             []string
	Dependency                                               bool // only there as a dependency
}

// LeftOutRow is one plugin a channel leaves out, and why.
type LeftOutRow struct {
	Plugin, PluginURL, Kind, Reason string
}

// ChannelView is one channel: what a developer runs, what it holds, what
// it leaves out.
type ChannelView struct {
	Layout
	ChannelRow
	Command string
	Scope   string
	Entries []ChannelEntryRow
	LeftOut []LeftOutRow
	Changes []string
}
