package agent

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/wharfhq/wharf/internal/core/settings"
	"github.com/wharfhq/wharf/plugin"
)

// Error types of hooks that load but cannot all run.
const (
	// TypeHookNotRunnable (layer active): a hook nothing can run (an
	// unknown type, an http hook without a URL, an mcp_tool hook without
	// its server or tool).
	TypeHookNotRunnable = "hook-not-runnable"
	// TypeHookEventUnknown (layer active): a hook for an event Claude Code
	// does not document; it would never fire.
	TypeHookEventUnknown = "hook-event-unknown"
	// TypeHookURLRefused (layer policy): an http hook whose URL
	// allowedHttpHookUrls does not allow.
	TypeHookURLRefused = "hook-url-refused"
)

// KeyAllowedHTTPHookURLs is the settings key (as in Claude Code) listing the
// URL patterns http hooks may POST to; "*" matches any run of characters.
const KeyAllowedHTTPHookURLs = "allowedHttpHookUrls"

// httpHookAllowlist reads allowedHttpHookUrls as the lists a URL must each
// match. Managed settings own the key when any managed directory sets it:
// each managed directory is a policy layer, whose documents' lists are
// joined, and a URL must be allowed by every layer that sets the key, so
// a further managed directory (WHARF_MANAGED_DIR) can only narrow what the
// system's allows. Otherwise the lists of the user, project, local and flag
// settings are joined into one. nil means no restriction; a list that is
// empty refuses every http hook.
func httpHookAllowlist(snap *settings.Snapshot) ([][]string, []string) {
	var warns []string
	read := func(doc settings.Document) ([]string, bool) {
		if doc.Missing || len(doc.Data) == 0 || !strings.Contains(string(doc.Data), KeyAllowedHTTPHookURLs) {
			return nil, false
		}
		s, err := settings.Parse(doc.Name, doc.Data)
		if err != nil {
			return nil, false
		}
		raw, ok := s.Unknown[KeyAllowedHTTPHookURLs]
		if !ok {
			return nil, false
		}
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			warns = append(warns, fmt.Sprintf("%s: %s must be an array of URL patterns; every http hook is refused", doc.Name, KeyAllowedHTTPHookURLs))
			list = nil
		}
		return append([]string{}, list...), true
	}
	var managed [][]string
	for _, layer := range settings.ManagedLayers(snap.Docs) {
		var list []string
		set := false
		for _, doc := range layer {
			if l, ok := read(doc); ok {
				list, set = append(list, l...), true
			}
		}
		if set {
			managed = append(managed, append([]string{}, list...))
		}
	}
	if len(managed) > 0 {
		return managed, warns
	}
	var other []string
	otherSet := false
	for _, doc := range snap.Docs {
		if doc.Scope == settings.ScopeManaged {
			continue
		}
		if l, ok := read(doc); ok {
			other, otherSet = append(other, l...), true
		}
	}
	if otherSet {
		return [][]string{append([]string{}, other...)}, warns
	}
	return nil, warns
}

// urlAllowed reports whether u matches a pattern of every list of allow.
func urlAllowed(allow [][]string, u string) bool {
	for _, list := range allow {
		if !urlMatchesAny(list, u) {
			return false
		}
	}
	return true
}

func urlMatchesAny(patterns []string, u string) bool {
	for _, p := range patterns {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*") + "$"
		if ok, _ := regexp.MatchString(re, u); ok {
			return true
		}
	}
	return false
}

// prepareHooks checks the hook components of a load: a hook for an unknown
// event is skipped with a warning; within a known event, a hook nothing
// can run (an unknown type, a broken http or mcp_tool hook) or an http hook to a URL not
// allowed is skipped as a component failure naming its file and field,
// while the event's other hooks load; the scripts of the hooks that load
// are pinned. comps is the caller's and is reused for the result; the
// components it points to are never changed (the index shares them): a
// prepared hook is a new component.
func (in *loadInput) prepareHooks(comps []*Component, skips []Skipped) ([]*Component, []Skipped, []string) {
	var warns []string
	out := comps[:0]
	for _, cp := range comps {
		if cp.Kind != plugin.KindHook || cp.Hook == nil {
			out = append(out, cp)
			continue
		}
		c := *cp
		file := c.Path
		if file == "" {
			file = "marketplace entry"
		}
		if !c.Hook.Event.IsKnown() {
			err := plugin.Errorf(plugin.LayerActive, TypeHookEventUnknown, componentObject(c),
				"rename the event to one Claude Code documents (see docs/agent.md), or remove it",
				"%s: field hooks.%s: unknown hook event %q; its hooks never fire", file, c.Hook.Event, c.Hook.Event)
			skips = append(skips, Skipped{Component: c, Err: err})
			warns = append(warns, err.Error())
			continue
		}
		h := &Hook{Event: c.Hook.Event, Scripts: map[string][]ScriptPin{}}
		stripped := false
		var origin [][][2]int
		env := c.envLookup(in.o.Project)
		for i, m := range c.Hook.Matchers {
			nm := plugin.HookMatcher{Matcher: m.Matcher}
			var pos [][2]int
			for j, hk := range m.Hooks {
				// field names the hook in a message; most hooks have none.
				field := func() string { return fmt.Sprintf("hooks.%s[%d].hooks[%d]", c.Hook.Event, i, j) }
				var reason, typ, fieldName string
				switch hk.Type {
				case "", "command":
				case "http":
					var u string
					_ = json.Unmarshal(hk.Extra["url"], &u)
					if pu, err := url.Parse(u); err != nil || pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "" {
						reason, typ, fieldName = fmt.Sprintf("url %q is not an http(s) URL", u), TypeHookNotRunnable, ".url"
					} else if !urlAllowed(in.httpAllow, u) {
						reason, typ, fieldName = fmt.Sprintf("url %q is not allowed by %s", u, KeyAllowedHTTPHookURLs), TypeHookURLRefused, ".url"
					}
				case "mcp_tool":
					reason, fieldName = mcpToolProblem(hk)
					if reason != "" {
						typ = TypeHookNotRunnable
					}
				case "prompt", "agent":
					// Live and listed, as in Claude Code: the agent that
					// embeds wharf runs it with its model; wharf's own
					// runner reports it as not run.
				default:
					reason, typ, fieldName = fmt.Sprintf("unknown hook type %q; use command, http, mcp_tool, prompt or agent", hk.Type), TypeHookNotRunnable, ".type"
				}
				if reason != "" {
					layer := plugin.LayerActive
					hint := "the event's other hooks load; fix or remove this one"
					if typ == TypeHookURLRefused {
						layer, hint = plugin.LayerPolicy, "ask your administrator to allow the URL in "+KeyAllowedHTTPHookURLs
					}
					one := c
					one.Hook = &Hook{Event: c.Hook.Event, Matchers: []plugin.HookMatcher{{Matcher: m.Matcher, Hooks: []plugin.Hook{hk}}}}
					skips = append(skips, Skipped{Component: one, Err: plugin.Errorf(layer, typ, componentObject(c), hint,
						"%s: field %s%s: %s", file, field(), fieldName, reason)})
					stripped = true
					continue
				}
				if raw, ok := hk.Extra["if"]; ok {
					if w := ifWarning(c.Hook.Event, raw); w != "" {
						warns = append(warns, fmt.Sprintf("%s: %s: field %s.if: %s", componentObject(c), file, field(), w))
					}
				}
				if raw, ok := hk.Extra["async"]; ok && string(raw) == "true" && hk.Type != "" && hk.Type != "command" {
					warns = append(warns, fmt.Sprintf("%s: %s: field %s.async: only command hooks run in the background; this %s hook runs in the foreground", componentObject(c), file, field(), hk.Type))
				}
				if hk.Type != "http" && hk.Command != "" {
					if _, ok := h.Scripts[hk.Command]; !ok {
						h.Scripts[hk.Command] = pinScripts(hk.Command, in.o.Project, env)
					}
				}
				nm.Hooks = append(nm.Hooks, hk)
				pos = append(pos, [2]int{i, j})
			}
			if len(nm.Hooks) > 0 {
				h.Matchers = append(h.Matchers, nm)
				origin = append(origin, pos)
			}
		}
		if stripped {
			h.Origin = origin
		}
		if len(h.Matchers) == 0 {
			continue // nothing of it can run: it is not live
		}
		c.Hook = h
		out = append(out, &c)
	}
	return out, skips, warns
}

func componentObject(c Component) string {
	if c.Source == SourcePlugin {
		return c.Plugin.String() + " " + string(c.Kind) + " " + c.Local
	}
	return c.Source + " " + string(c.Kind) + " " + c.Local
}

// ifWarning says what is wrong with a hook's "if" rule, or "" when the
// runner evaluates it as Claude Code does.
func ifWarning(ev plugin.HookEvent, raw json.RawMessage) string {
	var rule string
	if err := json.Unmarshal(raw, &rule); err != nil {
		return "must be a string permission rule such as \"Bash(git *)\"; the hook never runs"
	}
	r, err := plugin.ParseHookIf(rule)
	if err != nil {
		return err.Error() + "; the hook never runs"
	}
	if !plugin.IfEvaluated(ev) {
		return fmt.Sprintf("%s has no tool call: as in Claude Code, a hook with \"if\" never runs on it; remove \"if\"", ev)
	}
	if err := r.Supported(); err != nil {
		return err.Error() + "; the hook runs for every " + r.Tool + " call its matcher selects"
	}
	return ""
}

// mcpToolProblem says why an mcp_tool hook cannot run (server and tool are
// required strings, input an object), with the field, or "" when it can.
func mcpToolProblem(hk plugin.Hook) (reason, field string) {
	for _, k := range []string{"server", "tool"} {
		var v string
		if err := json.Unmarshal(hk.Extra[k], &v); err != nil || v == "" {
			return fmt.Sprintf("an mcp_tool hook needs %q: the name of the MCP server, and of its tool, to call", k), "." + k
		}
	}
	if raw, ok := hk.Extra["input"]; ok {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return "input must be an object of the tool's arguments", ".input"
		}
	}
	return "", ""
}
