# wharf's built-in policy: the standard managed-settings keys.
#
# data.wharf_index.names[i] is the name of policy layer i (org first).
# policy/data.go reads each layer's managed settings and indexes the big
# lists (strictKnownMarketplaces, blockedMarketplaces, enabledPlugins,
# requireSignatures, surface and marketplace lists) in Go; every evaluation
# gets, in input.facts, what the layers say about this request's source,
# plugin, surface or marketplace. A key is absent when it would be empty:
#   strict_invalid, blocked_invalid, surfaces_all, managed_hooks_only,
#   disable_sideload, signatures_invalid
#                   [layer index, ...] of the layers where the key is invalid
#                   (or, for the last four, set; every request gets these)
#   strict_unlisted [layer index, ...] whose strictKnownMarketplaces is set
#                   and does not list the source (exact, "owner/*",
#                   hostPattern, pathPattern); every such layer when the
#                   source is unknown
#   blocked_by      [[layer index, "exact"|"owner"|"host"|"path", pattern], ...]
#   enabled         [[layer index, true|false|"invalid"], ...] for the plugin
#                   ([layer index, false|"invalid", "name@other"] when the
#                   layer forces it off under another name its source is
#                   declared as)
#   signatures      [[layer index, {keyid, ...}, invalid, signed,
#                   marketplace], ...] for the plugin's marketplace and the
#                   names its source is declared as (signed: one of the
#                   request's verified keys is listed; never for an invalid
#                   entry)
#   surface_listing [layer index, ...] whose strictPluginOnlyCustomization
#                   lists the surface
#   unbound         [[layer index, declared source], ...] whose
#                   extraKnownMarketplaces declares the plugin's
#                   marketplace name for another source than the
#                   request's; enabled then holds only forced-off entries
#   managed_layer   for a component from the managed settings of a layer
#                   below the highest (load_component, run_hook): that
#                   layer's index; past the last layer when none was read
#                   from its directory
#   capabilities_invalid
#                   [[layer index, field], ...] whose deniedCapabilities
#                   cannot be read (install, load)
#   capabilities_denied
#                   [[layer index, rule, message], ...]: the capabilities
#                   and findings of the plugin's tree (input.capabilities,
#                   input.findings) that a layer's deniedCapabilities,
#                   requireDeclaredHosts or deniedFindings denies (install,
#                   load)
#   cross           present for a dependency on another marketplace's
#                   plugin (install, cross_dependency): {"unlisted": [layer
#                   index, ...] whose allowCrossMarketplaceDependenciesOn is
#                   set and does not list the plugin's marketplace}
# so a decision costs a handful of lookups whatever the list sizes. What the
# entries mean is decided here, per layer: a lower layer can only add deny
# reasons (allowlists intersect, blocklists and admin denies union). The
# exception is a forced enabledPlugins state, where the highest layer that
# names the plugin wins.
#
# Admin modules live in package wharf.admin.<layer> and contribute
# `deny contains msg if ...`; they can add reasons, never remove one.
#
# The engine reads one set, `outcome`, of tagged entries:
#   ["deny", {"layer", "order", "rule", "message"}]   a reason
#   ["warning", message]
#   ["forced", "on"|"off"]
# and `decision` below is the same answer as one object (for `wharf policy
# test`). Every rule of `outcome` starts with conditions OPA's rule index
# decides without entering the rule: an equality on input.action and the
# presence of the input.facts entry it reads. A request that nothing
# restricts enters no rule here; admin rules: see the end.
package wharf.policy

r(i, rule, msg) := {"layer": data.wharf_index.names[i], "order": i, "rule": rule, "message": msg}

deny contains x if some ["deny", x] in outcome

warnings contains x if some ["warning", x] in outcome

default forced_state := ""

forced_state := x if some ["forced", x] in outcome

decision := {
	"allowed": count(deny) == 0,
	"forced": forced_state,
	"reasons": deny,
	"warnings": warnings,
}

# Which rules apply to which action:
#
#   strictKnownMarketplaces, blockedMarketplaces
#                                add_marketplace update_marketplace install enable load
#   forced off                   install enable load load_component run_hook
#                                sideload (the plugin as name@inline)
#   forced on                    disable uninstall
#   extraKnownMarketplaces       install enable load (a marketplace under a
#                                declared name with another source)
#   requireSignatures            install
#   deniedCapabilities, requireDeclaredHosts, deniedFindings
#                                install load (with the tree's content)
#   cross-marketplace dependencies  install cross_dependency
#   locked surfaces              load_component run_hook
#   allowManagedHooksOnly        run_hook
#   disableSideloadFlags         sideload
#   blockedMarketplaces          sideload (the directory), fetch_source
#                                (every source a plugin's tree is fetched
#                                from, redirect targets included)
#   admin rules                  every action

# (Action sets are written out in each rule: the rule index reads literal
# sets, not rules.)

# ---- strictKnownMarketplaces: every layer that sets it must list the source.

outcome contains ["deny", r(i, "strictKnownMarketplaces", msg)] if {
	input.action in {"add_marketplace", "update_marketplace", "install", "enable", "load"}
	input.facts.strict_invalid
	some i in input.facts.strict_invalid
	msg := sprintf("strictKnownMarketplaces is invalid, so no marketplace is allowed (fail closed); marketplace %s refused", [input.marketplace.name])
}

outcome contains ["deny", r(i, "strictKnownMarketplaces", strict_message)] if {
	input.action in {"add_marketplace", "update_marketplace", "install", "enable", "load"}
	input.facts.strict_unlisted
	some i in input.facts.strict_unlisted
}

strict_message := sprintf("marketplace %s has no known source, so strictKnownMarketplaces cannot allow it", [input.marketplace.name]) if {
	not input.marketplace.source_known
} else := sprintf("marketplace %s (%s) is not in strictKnownMarketplaces", [input.marketplace.name, input.marketplace.display])

# ---- blockedMarketplaces: any layer may block.

outcome contains ["deny", r(i, "blockedMarketplaces", msg)] if {
	input.action in {"add_marketplace", "update_marketplace", "install", "enable", "load"}
	input.facts.blocked_invalid
	some i in input.facts.blocked_invalid
	msg := sprintf("blockedMarketplaces is invalid, so every marketplace is blocked (fail closed); marketplace %s refused", [input.marketplace.name])
}

outcome contains ["deny", r(e[0], "blockedMarketplaces", blocked_message(e[1], e[2]))] if {
	input.action in {"add_marketplace", "update_marketplace", "install", "enable", "load"}
	input.facts.blocked_by
	some e in input.facts.blocked_by
}

# blockedMarketplaces holds for content that arrives without a marketplace
# add too: a --plugin-dir (sideload) and every source a plugin's tree is
# fetched from, redirects included (fetch_source).

outcome contains ["deny", r(i, "blockedMarketplaces", msg)] if {
	input.action in {"sideload", "fetch_source"}
	input.facts.blocked_invalid
	some i in input.facts.blocked_invalid
	msg := sprintf("blockedMarketplaces is invalid, so every source is blocked (fail closed); %s %s refused", [arrival[input.action], input.marketplace.display])
}

outcome contains ["deny", r(e[0], "blockedMarketplaces", msg)] if {
	input.action in {"sideload", "fetch_source"}
	input.facts.blocked_by
	some e in input.facts.blocked_by
	msg := sprintf("%s %s is blocked by blockedMarketplaces", [arrival[input.action], input.marketplace.display])
}

arrival := {"sideload": "plugin directory", "fetch_source": "plugin source"}

blocked_message("exact", _) := sprintf("marketplace %s (%s) is blocked", [input.marketplace.name, input.marketplace.display])

blocked_message("owner", _) := sprintf("marketplace %s (%s) is blocked by the wildcard \"%s/*\"", [input.marketplace.name, input.marketplace.display, input.marketplace.owner])

blocked_message("host", pattern) := sprintf("marketplace %s (%s) is blocked by hostPattern %q", [input.marketplace.name, input.marketplace.display, pattern])

blocked_message("path", pattern) := sprintf("marketplace %s (%s) is blocked by pathPattern %q", [input.marketplace.name, input.marketplace.display, pattern])

# ---- managed enabledPlugins: the highest layer that names the plugin decides.

outcome contains ["forced", "on"] if input.facts.enabled[0][1] == true

outcome contains ["forced", "off"] if {
	input.facts.enabled[0][1] == false
	not waived(input.facts.enabled[0][0])
}

outcome contains ["forced", "off"] if input.facts.enabled[0][1] == "invalid"

outcome contains ["deny", r(input.facts.enabled[0][0], "enabledPlugins", off_message)] if {
	input.action in {"install", "enable", "load", "load_component", "run_hook", "sideload"}
	input.facts.enabled[0][1] == false
	not waived(input.facts.enabled[0][0])
}

off_message := sprintf("%s is forbidden: managed enabledPlugins sets %s to false, and marketplace %s (%s) is the one managed settings declare as %s", [input.plugin, input.facts.enabled[0][2], input.plugin_marketplace, input.marketplace.display, split(input.facts.enabled[0][2], "@")[1]]) if {
	input.facts.enabled[0][2]
} else := sprintf("%s is forbidden: managed enabledPlugins sets it to false", [input.plugin])

outcome contains ["deny", r(input.facts.enabled[0][0], "enabledPlugins", msg)] if {
	input.action in {"install", "enable", "load", "load_component", "run_hook", "sideload"}
	input.facts.enabled[0][1] == "invalid"
	msg := sprintf("%s is forbidden: managed enabledPlugins has an invalid value for it (fail closed)", [input.plugin])
}

outcome contains ["deny", r(input.facts.enabled[0][0], "enabledPlugins", msg)] if {
	input.action in {"disable", "uninstall"}
	input.facts.enabled[0][1] == true
	msg := sprintf("%s is forced on by managed enabledPlugins; it cannot be %s", [input.plugin, past[input.action]])
}

past := {"disable": "disabled", "uninstall": "uninstalled"}

# ---- extraKnownMarketplaces: a marketplace name a layer declares stands for
# the source it declares. A marketplace known locally under that name with
# another source is not that marketplace: its plugins are refused (and get
# no forced-on state, see input.facts.unbound).

outcome contains ["deny", r(e[0], "extraKnownMarketplaces", unbound_message(e[1]))] if {
	input.action in {"install", "enable", "load"}
	input.facts.unbound
	some e in input.facts.unbound
}

unbound_message(declared) := sprintf("marketplace %s has no known source, so it cannot be the marketplace managed settings declare as %s (%s); %s refused", [input.plugin_marketplace, input.plugin_marketplace, declared, input.plugin]) if {
	not input.marketplace.source_known
} else := sprintf("marketplace %s (%s) is not the marketplace managed settings declare as %s (%s); %s refused", [input.plugin_marketplace, input.marketplace.display, input.plugin_marketplace, declared, input.plugin])

state_name(true) := "on"

state_name(false) := "off"

state_name("invalid") := "off (invalid value)"

# A lower layer's opposite forced state is ignored, with a warning.
outcome contains ["warning", msg] if {
	input.facts.enabled[1]
	top := input.facts.enabled[0]
	some k, e in input.facts.enabled
	k > 0
	state_name(e[1]) != state_name(top[1])
	msg := sprintf("layer %s forces %s %s, ignored: layer %s above it forces it %s", [
		data.wharf_index.names[e[0]], input.plugin, state_name(e[1]),
		data.wharf_index.names[top[0]], state_name(top[1]),
	])
}

# ---- strictPluginOnlyCustomization: locked surfaces load only from managed
# settings, plugins and builtins. For run_hook the surface is hooks.

outcome contains ["deny", r(i, "strictPluginOnlyCustomization", locked_message)] if {
	input.action in {"load_component", "run_hook"}
	input.source_kind in {"user", "project"}
	input.facts.surfaces_all
	some i in input.facts.surfaces_all
}

outcome contains ["deny", r(i, "strictPluginOnlyCustomization", locked_message)] if {
	input.action in {"load_component", "run_hook"}
	input.source_kind in {"user", "project"}
	input.facts.surface_listing
	some i in input.facts.surface_listing
}

# A component from the managed settings of a lower layer (a further
# managed directory) is managed for that layer and the layers below it
# only: a higher layer's lock holds for it.

outcome contains ["deny", r(i, "strictPluginOnlyCustomization", lower_managed_message)] if {
	input.action in {"load_component", "run_hook"}
	input.facts.managed_layer
	input.facts.surfaces_all
	some i in input.facts.surfaces_all
	i < input.facts.managed_layer
}

outcome contains ["deny", r(i, "strictPluginOnlyCustomization", lower_managed_message)] if {
	input.action in {"load_component", "run_hook"}
	input.facts.managed_layer
	input.facts.surface_listing
	some i in input.facts.surface_listing
	i < input.facts.managed_layer
}

lower_managed_message := sprintf("%s from the managed settings of layer %s are locked: strictPluginOnlyCustomization of a higher layer allows them only from its own managed settings and plugins", [locked_surface, managed_layer_name])

managed_layer_name := data.wharf_index.names[input.facts.managed_layer] if {
	input.facts.managed_layer < count(data.wharf_index.names)
} else := sprintf("%q (no policy layer is read from it)", [input.managed_dir])

locked_surface := "hooks" if input.action == "run_hook"

else := input.surface

locked_message := sprintf("%s from %s settings are locked: strictPluginOnlyCustomization allows them only from managed settings and plugins", [locked_surface, input.source_kind])

# ---- allowCrossMarketplaceDependenciesOn: a dependency on another
# marketplace's plugin must be declared by intent (input.declared_cross: the
# dependent marketplace's marketplace.json list, plus the user's and
# project's settings), and every policy layer that sets the key must list the
# marketplace. Layers only narrow, so adding a layer never allows more.

cross if {
	input.required_by_marketplace != ""
	input.required_by_marketplace != input.plugin_marketplace
}

outcome contains ["deny", {"layer": "default", "order": -1, "rule": "allowCrossMarketplaceDependenciesOn", "message": msg}] if {
	input.action in {"install", "cross_dependency"}
	input.facts.cross
	cross
	not input.declared_cross[input.plugin_marketplace]
	msg := sprintf("%s depends on %s from another marketplace (%s), which marketplace %s does not list in allowCrossMarketplaceDependenciesOn", [input.required_by, input.plugin, input.plugin_marketplace, input.required_by_marketplace])
}

outcome contains ["deny", r(i, "allowCrossMarketplaceDependenciesOn", msg)] if {
	input.action in {"install", "cross_dependency"}
	input.facts.cross.unlisted
	cross
	some i in input.facts.cross.unlisted
	msg := sprintf("%s depends on %s from another marketplace (%s), which allowCrossMarketplaceDependenciesOn does not list", [input.required_by, input.plugin, input.plugin_marketplace])
}

# ---- hooks: allowManagedHooksOnly runs only managed hooks, builtin hooks
# and hooks of plugins forced on by managed enabledPlugins.

outcome contains ["deny", r(i, "allowManagedHooksOnly", msg)] if {
	input.action == "run_hook"
	input.facts.managed_hooks_only
	not input.source_kind in {"managed", "builtin"}
	some i in input.facts.managed_hooks_only
	not hook_forced_at_or_above(i)
	msg := sprintf("hook from %s refused: allowManagedHooksOnly runs only managed hooks and hooks of plugins forced on by managed enabledPlugins", [hook_origin])
}

outcome contains ["deny", r(i, "allowManagedHooksOnly", msg)] if {
	input.action == "run_hook"
	input.facts.managed_hooks_only
	input.facts.managed_layer
	some i in input.facts.managed_hooks_only
	i < input.facts.managed_layer
	msg := sprintf("hook from the managed settings of layer %s refused: allowManagedHooksOnly of a higher layer runs only its own and higher layers' managed hooks", [managed_layer_name])
}

# A plugin's hooks are exempt from layer i's allowManagedHooksOnly only when
# the plugin is forced on by layer i or a layer above it: a lower layer
# cannot exempt its own plugins from a higher layer's restriction.
hook_forced_at_or_above(i) if {
	input.source_kind == "plugin"
	input.facts.enabled[0][1] == true
	input.facts.enabled[0][0] <= i
}

hook_origin := input.plugin if input.source_kind == "plugin"

else := sprintf("%s settings", [input.source_kind])

# ---- disableSideloadFlags

outcome contains ["deny", r(i, "disableSideloadFlags", msg)] if {
	input.action == "sideload"
	input.facts.disable_sideload
	some i in input.facts.disable_sideload
	msg := sprintf("--plugin-dir %s refused: disableSideloadFlags is set", [input.path])
}

# ---- requireSignatures (wharf): an install from a listed marketplace needs a
# valid signature by one of the keys of every layer that lists it.

outcome contains ["deny", r(i, "requireSignatures", msg)] if {
	input.action == "install"
	input.facts.signatures_invalid
	some i in input.facts.signatures_invalid
	msg := sprintf("requireSignatures is invalid, so every install is refused (fail closed); %s refused", [input.plugin])
}

# An invalid entry denies whatever was signed.
outcome contains ["deny", r(e[0], "requireSignatures", signature_message(e[2], e[1], e[4]))] if {
	input.action == "install"
	input.facts.signatures
	some e in input.facts.signatures
	not e[3]
}

signature_message(false, keys, mkt) := sprintf("%s needs a valid signature by one of the keys %v (requireSignatures for %s)", [input.plugin, keys, mkt])

signature_message(true, _, mkt) := sprintf("requireSignatures for %s is invalid, so its installs are refused (fail closed); %s refused", [mkt, input.plugin])

# ---- deniedCapabilities, requireDeclaredHosts, deniedFindings (wharf):
# what a plugin's tree can do, matched in Go (policy/capdeny.go) against
# input.capabilities and input.findings; every layer's entries add
# reasons. A deniedCapabilities that cannot be read refuses every plugin,
# waiver or not; a readable one's denials are lifted by a waiver for the
# plugin as enabledPlugins false is (see requests and waivers).

outcome contains ["deny", r(e[0], e[1], e[2])] if {
	input.action in {"install", "load"}
	input.facts.capabilities_denied
	some e in input.facts.capabilities_denied
	not waived(e[0])
}

outcome contains ["deny", r(e[0], "deniedCapabilities", msg)] if {
	input.action in {"install", "load"}
	input.facts.capabilities_invalid
	some e in input.facts.capabilities_invalid
	msg := sprintf("deniedCapabilities cannot be read (%s), so every plugin is refused (fail closed); %s refused", [e[1], input.plugin])
}

# ---- requests and waivers: an approved request (a waiver) travels in the
# signed bundle of the server that approved it. For its plugin it lifts the
# enabledPlugins false and the admin denials of that bundle's layers whose
# settings say allowWaivers: true, and nothing else (see policy/waiver.go).
# data.wharf_waivers[plugin] = {"layers": [layer index, ...], "waivers":
# [{"request", "by", "until", "note"}, ...]}, built when the policy is
# loaded from the waivers in force then.

waived(i) if i in data.wharf_waivers[input.plugin].layers

outcome contains ["warning", msg] if {
	input.action in {"install", "enable", "load"}
	some w in data.wharf_waivers[input.plugin].waivers
	msg := sprintf("%s: request %s approved by %s%s%s (it lifts what layers with allowWaivers deny)", [input.plugin, w.request, w.by, waiver_until(w.until), waiver_note(w.note)])
}

waiver_until("") := ""

waiver_until(t) := sprintf(" until %s", [t]) if t != ""

waiver_note("") := ""

waiver_note(n) := sprintf(": %s", [n]) if n != ""

# ---- admin rules: package wharf.admin.<layer>, `deny contains msg if ...`,
# on every action. For each layer that has admin modules the engine adds
#
#   outcome contains ["deny", r(i, "admin", admin_message(msg))] if {
#   	input.action in {"install"}    # the comparisons every deny rule of
#   	                               # the layer makes, if any
#   	not waived(i)                  # see requests and waivers
#   	some msg in data.wharf.admin["<layer>"].deny
#   }
#
# (see adminModule in policy/admin.go): a reference to a known package is
# looked up directly, where one built at evaluation would walk every
# package under data.wharf.admin, and the rule index skips a layer whose
# rules cannot match the request.

admin_message(x) := x if is_string(x)

else := sprintf("%v", [x])
