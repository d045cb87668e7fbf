# wharf's built-in policy: the standard managed-settings keys.
#
# data.wharf_index holds the policy layers (org first) as built by
# policy/data.go from each layer's managed settings:
#   names[i]        the name of layer i
#   strict_set, strict_invalid, blocked_invalid, surfaces_all, cross_set,
#   managed_hooks_only, disable_sideload, signatures_invalid
#                   [layer index, ...] of the layers where the key is set
#                   (or invalid)
# The big lists (strictKnownMarketplaces, blockedMarketplaces,
# enabledPlugins, requireSignatures, surface and marketplace lists) are
# indexed in Go; every evaluation gets, in input.facts, the entries that
# name this request's source, plugin, surface or marketplace:
#   strict_listing  [layer index, ...] whose strictKnownMarketplaces lists
#                   the source (exact, "owner/*", hostPattern, pathPattern);
#                   empty when the source is unknown
#   blocked_by      [[layer index, "exact"|"owner"|"host"|"path", pattern], ...]
#   enabled         [[layer index, true|false|"invalid"], ...] for the plugin
#   signatures      [[layer index, {keyid, ...}, invalid, signed], ...] for
#                   the plugin's marketplace (signed: one of the request's
#                   verified keys is listed; never for an invalid entry)
#   surface_listing [layer index, ...] whose strictPluginOnlyCustomization
#                   lists the surface
#   cross_listing   [layer index, ...] whose
#                   allowCrossMarketplaceDependenciesOn lists the plugin's
#                   marketplace
# so a decision costs a handful of lookups whatever the list sizes. What the
# entries mean is decided here, per layer: a lower layer can only add deny
# reasons (allowlists intersect, blocklists and admin denies union). The
# exception is a forced enabledPlugins state, where the highest layer that
# names the plugin wins.
#
# Admin modules live in package wharf.admin.<layer> and contribute
# `deny contains msg if ...`; they can add reasons, never remove one.
package wharf.policy

user_sources := {"user", "project"}

r(i, rule, msg) := {"layer": data.wharf_index.names[i], "order": i, "rule": rule, "message": msg}

# Dispatch by action. Every deny rule starts with an equality on
# input.action (admin rules aside), so OPA's rule index selects the few rules
# of the request's action and skips the rest without evaluating them. Rules
# of a single action (requireSignatures, disableSideloadFlags) are deny rules
# themselves; the others are dispatched here:
#
#   marketplace rules (market_deny)    add_marketplace update_marketplace install enable load
#   forced off (forced_off_reason)     install enable load load_component run_hook
#   forced on (forced_on_reason)       disable uninstall
#   requireSignatures                  install
#   cross-marketplace dependencies     install cross_dependency
#   locked surfaces                    load_component
#   hooks                              run_hook
#   disableSideloadFlags               sideload

deny contains x if {
	input.action == "add_marketplace"
	some x in market_deny
}

deny contains x if {
	input.action == "update_marketplace"
	some x in market_deny
}

deny contains x if {
	input.action == "install"
	some x in market_deny
}

deny contains forced_off_reason if {
	input.action == "install"
	forced == "off"
}

deny contains x if {
	input.action == "install"
	cross
	some x in cross_deny
}

deny contains x if {
	input.action == "enable"
	some x in market_deny
}

deny contains forced_off_reason if {
	input.action == "enable"
	forced == "off"
}

deny contains x if {
	input.action == "load"
	some x in market_deny
}

deny contains forced_off_reason if {
	input.action == "load"
	forced == "off"
}

deny contains forced_off_reason if {
	input.action == "load_component"
	forced == "off"
}

deny contains x if {
	input.action == "load_component"
	user_sources[input.source_kind]
	some x in surface_deny(input.surface)
}

deny contains forced_off_reason if {
	input.action == "run_hook"
	forced == "off"
}

deny contains x if {
	input.action == "run_hook"
	some x in hook_deny
}

deny contains forced_on_reason if {
	input.action == "disable"
	forced == "on"
}

deny contains forced_on_reason if {
	input.action == "uninstall"
	forced == "on"
}

deny contains x if {
	input.action == "cross_dependency"
	cross
	some x in cross_deny
}

# ---- strictKnownMarketplaces: every layer that sets it must list the source.

market_deny contains r(i, "strictKnownMarketplaces", msg) if {
	some i in data.wharf_index.strict_invalid
	msg := sprintf("strictKnownMarketplaces is invalid, so no marketplace is allowed (fail closed); marketplace %s refused", [input.marketplace.name])
}

# input.facts.strict_listing is empty when the source is unknown.
market_deny contains r(i, "strictKnownMarketplaces", strict_message) if {
	some i in data.wharf_index.strict_set
	not i in input.facts.strict_listing
}

strict_message := sprintf("marketplace %s has no known source, so strictKnownMarketplaces cannot allow it", [input.marketplace.name]) if {
	not input.marketplace.source_known
} else := sprintf("marketplace %s (%s) is not in strictKnownMarketplaces", [input.marketplace.name, input.marketplace.display])

# ---- blockedMarketplaces: any layer may block.

market_deny contains r(i, "blockedMarketplaces", msg) if {
	some i in data.wharf_index.blocked_invalid
	msg := sprintf("blockedMarketplaces is invalid, so every marketplace is blocked (fail closed); marketplace %s refused", [input.marketplace.name])
}

market_deny contains r(e[0], "blockedMarketplaces", blocked_message(e[1], e[2])) if some e in input.facts.blocked_by

blocked_message("exact", _) := sprintf("marketplace %s (%s) is blocked", [input.marketplace.name, input.marketplace.display])

blocked_message("owner", _) := sprintf("marketplace %s (%s) is blocked by the wildcard \"%s/*\"", [input.marketplace.name, input.marketplace.display, input.marketplace.owner])

blocked_message("host", pattern) := sprintf("marketplace %s (%s) is blocked by hostPattern %q", [input.marketplace.name, input.marketplace.display, pattern])

blocked_message("path", pattern) := sprintf("marketplace %s (%s) is blocked by pathPattern %q", [input.marketplace.name, input.marketplace.display, pattern])

# ---- managed enabledPlugins: the highest layer that names the plugin decides.

forced_entry := input.facts.enabled[0]

forced := "on" if forced_entry[1] == true

forced := "off" if forced_entry[1] != true

default forced_state := ""

forced_state := forced

forced_off_reason := r(forced_entry[0], "enabledPlugins", forced_off_message(forced_entry[1]))

forced_off_message(false) := sprintf("%s is forbidden: managed enabledPlugins sets it to false", [input.plugin])

forced_off_message("invalid") := sprintf("%s is forbidden: managed enabledPlugins has an invalid value for it (fail closed)", [input.plugin])

forced_on_reason := r(forced_entry[0], "enabledPlugins", msg) if {
	msg := sprintf("%s is forced on by managed enabledPlugins; it cannot be %s", [input.plugin, past[input.action]])
}

past := {"disable": "disabled", "uninstall": "uninstalled"}

state_name(true) := "on"

state_name(false) := "off"

state_name("invalid") := "off (invalid value)"

warnings contains msg if {
	some k, e in input.facts.enabled
	k > 0
	state_name(e[1]) != state_name(forced_entry[1])
	msg := sprintf("layer %s forces %s %s, ignored: layer %s above it forces it %s", [
		data.wharf_index.names[e[0]], input.plugin, state_name(e[1]),
		data.wharf_index.names[forced_entry[0]], state_name(forced_entry[1]),
	])
}

# ---- strictPluginOnlyCustomization: locked surfaces load only from managed
# settings, plugins and builtins.

surface_deny(surface) := {r(i, "strictPluginOnlyCustomization", msg) |
	some i in locked
	msg := sprintf("%s from %s settings are locked: strictPluginOnlyCustomization allows them only from managed settings and plugins", [surface, input.source_kind])
}

locked := {i | some i in data.wharf_index.surfaces_all} | {i | some i in input.facts.surface_listing}

# ---- allowCrossMarketplaceDependenciesOn: a dependency on another
# marketplace's plugin must be declared by intent (input.declared_cross: the
# dependent marketplace's marketplace.json list, plus the user's and
# project's settings), and every policy layer that sets the key must list the
# marketplace. Layers only narrow, so adding a layer never allows more.

cross if {
	input.required_by_marketplace != ""
	input.required_by_marketplace != input.plugin_marketplace
}

cross_deny contains {"layer": "default", "order": -1, "rule": "allowCrossMarketplaceDependenciesOn", "message": msg} if {
	not input.declared_cross[input.plugin_marketplace]
	msg := sprintf("%s depends on %s from another marketplace (%s), which marketplace %s does not list in allowCrossMarketplaceDependenciesOn", [input.required_by, input.plugin, input.plugin_marketplace, input.required_by_marketplace])
}

cross_deny contains r(i, "allowCrossMarketplaceDependenciesOn", msg) if {
	some i in data.wharf_index.cross_set
	not cross_allowed[i]
	msg := sprintf("%s depends on %s from another marketplace (%s), which allowCrossMarketplaceDependenciesOn does not list", [input.required_by, input.plugin, input.plugin_marketplace])
}

cross_allowed contains i if some i in input.facts.cross_listing

# ---- hooks: strictPluginOnlyCustomization locks user/project hooks;
# allowManagedHooksOnly runs only managed hooks, builtin hooks and hooks of
# plugins forced on by managed enabledPlugins.

hook_deny contains x if {
	user_sources[input.source_kind]
	some x in surface_deny("hooks")
}

hook_deny contains r(i, "allowManagedHooksOnly", msg) if {
	not hook_managed_source
	some i in data.wharf_index.managed_hooks_only
	not hook_forced_at_or_above(i)
	msg := sprintf("hook from %s refused: allowManagedHooksOnly runs only managed hooks and hooks of plugins forced on by managed enabledPlugins", [hook_origin])
}

hook_managed_source if input.source_kind == "managed"

hook_managed_source if input.source_kind == "builtin"

# A plugin's hooks are exempt from layer i's allowManagedHooksOnly only when
# the plugin is forced on by layer i or a layer above it: a lower layer
# cannot exempt its own plugins from a higher layer's restriction.
hook_forced_at_or_above(i) if {
	input.source_kind == "plugin"
	forced == "on"
	forced_entry[0] <= i
}

hook_origin := input.plugin if input.source_kind == "plugin"

else := sprintf("%s settings", [input.source_kind])

# ---- disableSideloadFlags

deny contains r(i, "disableSideloadFlags", msg) if {
	input.action == "sideload"
	some i in data.wharf_index.disable_sideload
	msg := sprintf("--plugin-dir %s refused: disableSideloadFlags is set", [input.path])
}

# ---- requireSignatures (wharf): an install from a listed marketplace needs a
# valid signature by one of the keys of every layer that lists it.

deny contains r(i, "requireSignatures", msg) if {
	input.action == "install"
	some i in data.wharf_index.signatures_invalid
	msg := sprintf("requireSignatures is invalid, so every install is refused (fail closed); %s refused", [input.plugin])
}

# An invalid entry denies whatever was signed.
deny contains r(e[0], "requireSignatures", signature_message(e[2], e[1])) if {
	input.action == "install"
	some e in input.facts.signatures
	not e[3]
}

signature_message(false, keys) := sprintf("%s needs a valid signature by one of the keys %v (requireSignatures for %s)", [input.plugin, keys, input.plugin_marketplace])

signature_message(true, _) := sprintf("requireSignatures for %s is invalid, so its installs are refused (fail closed); %s refused", [input.plugin_marketplace, input.plugin])

# ---- admin rules: package wharf.admin.<layer>, `deny contains msg if ...`.

# Every action.
deny contains r(i, "admin", admin_message(msg)) if {
	some i, name in data.wharf_index.names
	some msg in data.wharf.admin[name].deny
}

admin_message(x) := x if is_string(x)

else := sprintf("%v", [x])

decision := {
	"allowed": count(deny) == 0,
	"forced": forced_state,
	"reasons": deny,
	"warnings": warnings,
}
