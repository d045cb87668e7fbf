// Package plugin is wharf's leaf package: plugin identifiers (name@source),
// the Claude Code marketplace and plugin manifest formats, component kinds,
// name and version sanitizing, and the typed errors every other layer uses.
//
// It imports nothing from wharf, so every other package may depend on it.
package plugin
