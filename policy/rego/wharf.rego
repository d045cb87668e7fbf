# wharf's built-in policy: the standard managed-settings keys.
#
# data.wharf.layers is the ordered list of policy layers (org first), each an
# index built from one managed settings document (see policy/data.go). Every
# rule below is evaluated per layer, so a lower layer can only add deny
# reasons: allowlists intersect, blocklists and admin denies union. The one
# exception is a forced enabledPlugins state, where the highest layer that
# names the plugin wins.
#
# Admin modules live in package wharf.admin.<layer> and contribute
# `deny contains msg if ...`; they can add reasons, never remove one.
package wharf.policy

layers := data.wharf.layers

market_actions := {"add_marketplace", "update_marketplace", "install", "enable", "load"}

forced_off_actions := {"install", "enable", "load", "load_component", "run_hook"}

forced_on_actions := {"disable", "uninstall"}

user_sources := {"user", "project"}

r(l, rule, msg) := {"layer": l.name, "order": l.index, "rule": rule, "message": msg}

# ---- strictKnownMarketplaces: an allowlist per layer; every layer must allow.

deny contains r(l, "strictKnownMarketplaces", msg) if {
	market_actions[input.action]
	some l in layers
	l.strict.invalid
	msg := sprintf("strictKnownMarketplaces is invalid, so no marketplace is allowed (fail closed); marketplace %s refused", [input.marketplace.name])
}

deny contains r(l, "strictKnownMarketplaces", msg) if {
	market_actions[input.action]
	not input.marketplace.source_known
	some l in layers
	l.strict.set
	not l.strict.invalid
	msg := sprintf("marketplace %s has no known source, so strictKnownMarketplaces cannot allow it", [input.marketplace.name])
}

deny contains r(l, "strictKnownMarketplaces", msg) if {
	market_actions[input.action]
	input.marketplace.source_known
	some l in layers
	l.strict.set
	not l.strict.invalid
	not listed(l.strict, input.marketplace)
	msg := sprintf("marketplace %s (%s) is not in strictKnownMarketplaces", [input.marketplace.name, input.marketplace.display])
}

listed(list, m) if list.exact[m.key]

listed(list, m) if list.owners[m.owner]

listed(list, m) if {
	m.host != ""
	some p in list.host_patterns
	regex.match(p, m.host)
}

listed(list, m) if {
	m.path != ""
	some p in list.path_patterns
	regex.match(p, m.path)
}

# ---- blockedMarketplaces: a blocklist per layer; any layer may block.

deny contains r(l, "blockedMarketplaces", msg) if {
	market_actions[input.action]
	some l in layers
	l.blocked.invalid
	msg := sprintf("blockedMarketplaces is invalid, so every marketplace is blocked (fail closed); marketplace %s refused", [input.marketplace.name])
}

deny contains r(l, "blockedMarketplaces", msg) if {
	market_actions[input.action]
	some l in layers
	l.blocked.exact[input.marketplace.key]
	msg := sprintf("marketplace %s (%s) is blocked", [input.marketplace.name, input.marketplace.display])
}

deny contains r(l, "blockedMarketplaces", msg) if {
	market_actions[input.action]
	some l in layers
	l.blocked.owners[input.marketplace.owner]
	msg := sprintf("marketplace %s (%s) is blocked by the wildcard \"%s/*\"", [input.marketplace.name, input.marketplace.display, input.marketplace.owner])
}

deny contains r(l, "blockedMarketplaces", msg) if {
	market_actions[input.action]
	input.marketplace.host != ""
	some l in layers
	some p in l.blocked.host_patterns
	regex.match(p, input.marketplace.host)
	msg := sprintf("marketplace %s (%s) is blocked by hostPattern %q", [input.marketplace.name, input.marketplace.display, p])
}

deny contains r(l, "blockedMarketplaces", msg) if {
	market_actions[input.action]
	input.marketplace.path != ""
	some l in layers
	some p in l.blocked.path_patterns
	regex.match(p, input.marketplace.path)
	msg := sprintf("marketplace %s (%s) is blocked by pathPattern %q", [input.marketplace.name, input.marketplace.display, p])
}

# ---- managed enabledPlugins: forced on / forced off; the highest layer that
# names the plugin decides.

layer_forced(l) := "on" if l.enabled[input.plugin] == true

layer_forced(l) := "off" if l.enabled[input.plugin] == false

layer_forced(l) := "off" if l.enabled_invalid[input.plugin]

forced_index := min({i | some i, l in layers; layer_forced(l)})

forced := layer_forced(layers[forced_index])

deny contains r(l, "enabledPlugins", msg) if {
	forced_off_actions[input.action]
	forced == "off"
	l := layers[forced_index]
	not l.enabled_invalid[input.plugin]
	msg := sprintf("%s is forbidden: managed enabledPlugins sets it to false", [input.plugin])
}

deny contains r(l, "enabledPlugins", msg) if {
	forced_off_actions[input.action]
	forced == "off"
	l := layers[forced_index]
	l.enabled_invalid[input.plugin]
	msg := sprintf("%s is forbidden: managed enabledPlugins has an invalid value for it (fail closed)", [input.plugin])
}

deny contains r(l, "enabledPlugins", msg) if {
	forced_on_actions[input.action]
	forced == "on"
	l := layers[forced_index]
	msg := sprintf("%s is forced on by managed enabledPlugins; it cannot be %s", [input.plugin, past[input.action]])
}

past := {"disable": "disabled", "uninstall": "uninstalled"}

warnings contains msg if {
	input.plugin != ""
	top := layers[forced_index]
	some i, l in layers
	i > forced_index
	s := layer_forced(l)
	s != forced
	msg := sprintf("layer %s forces %s %s, ignored: layer %s above it forces it %s", [l.name, input.plugin, s, top.name, forced])
}

# ---- strictPluginOnlyCustomization: locked surfaces load only from managed
# settings, plugins and builtins.

deny contains r(l, "strictPluginOnlyCustomization", msg) if {
	input.action == "load_component"
	user_sources[input.source_kind]
	some l in layers
	locked(l.surfaces, input.surface)
	msg := sprintf("%s from %s settings are locked: strictPluginOnlyCustomization allows them only from managed settings and plugins", [input.surface, input.source_kind])
}

deny contains r(l, "strictPluginOnlyCustomization", msg) if {
	input.action == "run_hook"
	user_sources[input.source_kind]
	some l in layers
	locked(l.surfaces, "hooks")
	msg := sprintf("hooks from %s settings are locked: strictPluginOnlyCustomization allows them only from managed settings and plugins", [input.source_kind])
}

locked(s, _) if s.all

locked(s, surface) if s.locked[surface]

# ---- allowCrossMarketplaceDependenciesOn: a dependency on another
# marketplace's plugin needs every layer that sets the key to list that
# marketplace; with no layer setting it, the dependent's marketplace must
# declare it.

cross if {
	input.required_by_marketplace != ""
	input.required_by_marketplace != input.plugin_marketplace
}

cross_actions := {"install", "cross_dependency"}

cross_policy_set if {
	some l in layers
	l.cross.set
}

deny contains {"layer": "default", "order": -1, "rule": "allowCrossMarketplaceDependenciesOn", "message": msg} if {
	cross_actions[input.action]
	cross
	not cross_policy_set
	not input.declared_cross[input.plugin_marketplace]
	msg := sprintf("%s depends on %s from another marketplace (%s); no policy layer lists %s in allowCrossMarketplaceDependenciesOn", [input.required_by, input.plugin, input.plugin_marketplace, input.plugin_marketplace])
}

deny contains r(l, "allowCrossMarketplaceDependenciesOn", msg) if {
	cross_actions[input.action]
	cross
	some l in layers
	l.cross.set
	not l.cross.allowed[input.plugin_marketplace]
	msg := sprintf("%s depends on %s from another marketplace (%s), which allowCrossMarketplaceDependenciesOn does not list", [input.required_by, input.plugin, input.plugin_marketplace])
}

# ---- allowManagedHooksOnly: only managed hooks, builtin hooks and hooks of
# plugins forced on by managed enabledPlugins run.

deny contains r(l, "allowManagedHooksOnly", msg) if {
	input.action == "run_hook"
	not hook_managed
	some l in layers
	l.managed_hooks_only
	msg := sprintf("hook from %s refused: allowManagedHooksOnly runs only managed hooks and hooks of plugins forced on by managed enabledPlugins", [hook_origin])
}

hook_managed if input.source_kind == "managed"

hook_managed if input.source_kind == "builtin"

hook_managed if {
	input.source_kind == "plugin"
	forced == "on"
}

hook_origin := input.plugin if input.source_kind == "plugin"

else := sprintf("%s settings", [input.source_kind])

# ---- disableSideloadFlags

deny contains r(l, "disableSideloadFlags", msg) if {
	input.action == "sideload"
	some l in layers
	l.disable_sideload
	msg := sprintf("--plugin-dir %s refused: disableSideloadFlags is set", [input.path])
}

# ---- requireSignatures (wharf): installs from a listed marketplace need a
# valid signature by one of the layer's keys; every layer that lists the
# marketplace must be satisfied.

deny contains r(l, "requireSignatures", msg) if {
	input.action == "install"
	some l in layers
	l.signatures.invalid
	msg := sprintf("requireSignatures is invalid, so every install is refused (fail closed); %s refused", [input.plugin])
}

deny contains r(l, "requireSignatures", msg) if {
	input.action == "install"
	some l in layers
	keys := l.signatures.keys[input.plugin_marketplace]
	not signed(keys)
	msg := sprintf("%s needs a valid signature by one of the keys %v (requireSignatures for %s)", [input.plugin, object.keys(keys), input.plugin_marketplace])
}

deny contains r(l, "requireSignatures", msg) if {
	input.action == "install"
	some l in layers
	l.signatures.invalid_markets[input.plugin_marketplace]
	msg := sprintf("requireSignatures for %s is invalid, so its installs are refused (fail closed); %s refused", [input.plugin_marketplace, input.plugin])
}

signed(keys) if {
	some k, _ in input.signatures
	keys[k]
}

# ---- admin rules: package wharf.admin.<layer>, `deny contains msg if ...`.

deny contains r(l, "admin", admin_message(msg)) if {
	some l in layers
	some msg in data.wharf.admin[l.name].deny
}

admin_message(m) := m if is_string(m)

else := sprintf("%v", [m])

default forced_state := ""

forced_state := forced

decision := {
	"allowed": count(deny) == 0,
	"forced": forced_state,
	"reasons": deny,
	"warnings": warnings,
}
