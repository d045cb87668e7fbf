package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/wharfhq/wharf/plugin"
)

// A Waiver is a request a developer made for a plugin that policy denies,
// approved by an administrator of the policy server, optionally until a
// date. The server carries the approved, unexpired ones in its signed
// bundle (data.json: wharf.waivers); ReadBundle attaches them to every
// layer of that bundle (Layer.Waivers).
//
// The rule: a waiver lifts, for its plugin only, the enabledPlugins
// (forced off), capability (deniedCapabilities, requireDeclaredHosts,
// deniedFindings) and admin Rego denials of the layers of the bundle that
// carries it, and only of those layers whose settings say
// "allowWaivers": true. It never lifts a denial of any other layer (the
// managed directories, another server's bundle, a --policy path), nor one
// of another rule (marketplace allowlists and blocklists, signatures,
// surfaces, hooks), nor a revocation, nor an invalid value (fail closed).
// A waiver whose Until has passed is dropped when the engine loads the
// policy (NewEngine, Replace, Reload), so the plugin is denied again at the
// next load.
type Waiver struct {
	Request  string     `json:"request"` // the request's id on the server
	Plugin   string     `json:"plugin"`  // name@marketplace
	Until    *time.Time `json:"until,omitempty"`
	By       string     `json:"by"` // the admin token that approved it
	Note     string     `json:"note,omitempty"`
	Approved time.Time  `json:"approved"`
}

// Waivers is the set a bundle carries.
type Waivers []Waiver

// Live reports whether w is in force at now.
func (w Waiver) Live(now time.Time) bool { return w.Until == nil || now.Before(*w.Until) }

// AllowWaiversKey is the managed settings key that makes a server layer's
// denials waivable: true, or absent (false). Any other value fails closed
// (no waiver lifts the layer's denials) with a warning.
const AllowWaiversKey = "allowWaivers"

// MaxWaivers bounds the waivers one bundle may carry.
const MaxWaivers = 10000

// WithClock sets the clock that decides which waivers have expired when
// policy is loaded (default time.Now).
func WithClock(now func() time.Time) Option { return func(e *Engine) { e.clock = now } }

// liveWaivers returns layers with the waivers expired at now left out,
// copying only the layers it changes.
func liveWaivers(layers []Layer, now func() time.Time) []Layer {
	var out []Layer
	for i, l := range layers {
		if len(l.Waivers) == 0 {
			continue
		}
		t := time.Now()
		if now != nil {
			t = now()
		}
		kept := slices.DeleteFunc(slices.Clone(l.Waivers), func(w Waiver) bool { return !w.Live(t) })
		if len(kept) == len(l.Waivers) {
			continue
		}
		if out == nil {
			out = slices.Clone(layers)
		}
		out[i].Waivers = kept
	}
	if out == nil {
		return layers
	}
	return out
}

// waiverInput is the input document of a layer's waivers: canonical JSON
// in request order, so the policy version changes with them.
func waiverInput(ws Waivers) []byte {
	s := slices.Clone(ws)
	slices.SortFunc(s, func(a, b Waiver) int { return strings.Compare(a.Request, b.Request) })
	raw, _ := json.Marshal(s) // plain fields: cannot fail
	return raw
}

// allowWaivers reads the layer's allowWaivers setting. An invalid value
// is false (fail closed), with a warning.
func allowWaivers(cl compiledLayer) (bool, string) {
	if cl.Settings == nil || cl.Lockdown {
		return false, ""
	}
	raw, ok := cl.Settings.Unknown[AllowWaiversKey]
	if !ok {
		return false, ""
	}
	var on bool
	if err := json.Unmarshal(raw, &on); err != nil {
		return false, fmt.Sprintf("policy layer %s: %s must be true or false, got %s; no request lifts this layer's denials (fail closed)", cl.Name, AllowWaiversKey, strings.TrimSpace(string(raw)))
	}
	return on, ""
}

// waiverData builds data.wharf_waivers: for each plugin with a waiver in
// force, the indexes of the layers whose denials it lifts (its bundle's
// layers that allow waivers) and the waivers themselves, for messages.
func waiverData(layers []compiledLayer, byLayer map[int]Waivers) (map[string]any, []string) {
	out := map[string]any{}
	var warnings []string
	type entry struct {
		layers  []any
		waivers []any
		seen    map[string]bool
	}
	per := map[string]*entry{}
	for i, cl := range layers {
		on, warn := allowWaivers(cl)
		if warn != "" {
			warnings = append(warnings, warn)
		}
		if !on {
			continue
		}
		for _, w := range byLayer[i] {
			e := per[w.Plugin]
			if e == nil {
				e = &entry{seen: map[string]bool{}}
				per[w.Plugin] = e
			}
			e.layers = append(e.layers, i)
			if !e.seen[w.Request] {
				e.seen[w.Request] = true
				until := ""
				if w.Until != nil {
					until = w.Until.UTC().Format(time.RFC3339)
				}
				e.waivers = append(e.waivers, map[string]any{"request": w.Request, "by": w.By, "until": until, "note": w.Note})
			}
		}
	}
	for p, e := range per {
		out[p] = map[string]any{"layers": e.layers, "waivers": e.waivers}
	}
	return out, warnings
}

// checkWaiver checks one waiver read from a bundle.
func checkWaiver(w Waiver) error {
	if w.Request == "" {
		return errors.New("no request id")
	}
	id, err := plugin.ParseID(w.Plugin)
	if err != nil || id.String() != w.Plugin {
		return fmt.Errorf("waiver %s: plugin %q is not a plugin id (name@marketplace)", w.Request, w.Plugin)
	}
	if w.By == "" {
		return fmt.Errorf("waiver %s: no approver", w.Request)
	}
	return nil
}
