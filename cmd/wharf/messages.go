package main

import (
	"regexp"
	"strings"

	"github.com/wharfhq/wharf/plugin"
)

// layerPrefix matches the name of an error layer where plugin.Error puts it:
// at the start of a message, or after the ": " of a wrapping error. The
// layers classify errors for exit codes and --json types; people read the
// object and what happened, not wharf's internal layer names.
var layerPrefix = regexp.MustCompile(`(^|: )(` + strings.Join([]string{
	string(plugin.LayerIntent), string(plugin.LayerMaterialization), string(plugin.LayerActive),
	string(plugin.LayerTrust), string(plugin.LayerPolicy), string(plugin.LayerDependency),
}, "|") + `): `)

// plainMessage is an error message as a person should read it: without
// layer names, and without a segment repeated by two wrapping errors
// ("x.json: x.json: bad" reads "x.json: bad").
func plainMessage(msg string) string {
	for {
		next := layerPrefix.ReplaceAllString(msg, "$1")
		if next == msg {
			break
		}
		msg = next
	}
	parts := strings.Split(msg, ": ")
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		last := i == len(parts)-1
		// "f.json: f.json: bad" and "f.json: f.json:2: bad" name the
		// object twice; keep the more precise one.
		if !last && p != "" && (parts[i+1] == p || strings.HasPrefix(parts[i+1], p+":")) {
			continue
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}
