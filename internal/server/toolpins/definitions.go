package toolpins

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/inventory"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/core/toolpin"
	"github.com/wharfhq/wharf/plugin"
)

// More buckets.
const (
	// DefinitionsBucket keeps the definitions reports carried:
	// "<plugin> <server> <hash>" → Definitions.
	DefinitionsBucket = "api-toolpins-defs"
	// AutoBucket keeps the pin-from-first-report settings:
	// "marketplace/<name>" or "plugin/<id>" → "on" or "off".
	AutoBucket = "api-toolpins-auto"
)

// MaxDefinitionsPerServer bounds the sets of definitions kept per plugin
// server: past it the oldest set no pin approves is dropped.
const MaxDefinitionsPerServer = 16

// Definitions is one set of a server's tool definitions as a report
// carried it (checked against Hash before it was kept).
type Definitions struct {
	Plugin string           `json:"plugin"`
	Server string           `json:"server"`
	Hash   string           `json:"hash"`
	Tools  []inventory.Tool `json:"tools"`
	// Seen is when a report first carried them.
	Seen time.Time `json:"seen"`
}

func defsKey(pluginID, server, hash string) string { return pluginID + " " + server + " " + hash }

// GetDefinitions returns the definitions of hash reported for a server,
// if a report carried them.
func GetDefinitions(r store.Reader, pluginID, server, hash string) (Definitions, bool, error) {
	raw, err := r.Get(DefinitionsBucket, defsKey(pluginID, server, hash))
	if errors.Is(err, store.ErrNotFound) {
		return Definitions{}, false, nil
	}
	if err != nil {
		return Definitions{}, false, err
	}
	var d Definitions
	if err := json.Unmarshal(raw, &d); err != nil {
		return Definitions{}, false, &CorruptError{Bucket: DefinitionsBucket, Key: defsKey(pluginID, server, hash), Err: err}
	}
	return d, true, nil
}

// keepDefinitions stores what m carries of its server's definitions,
// unless they are kept already, and drops the oldest unpinned set of that
// server past MaxDefinitionsPerServer. Definitions that do not hash to
// m.ToolsHash are never kept (a report is checked before; this holds for
// any caller).
func keepDefinitions(tx store.Tx, m inventory.MCPServer, now time.Time) error {
	if m.Tools == nil {
		return nil
	}
	if h, err := toolpin.Hash(inventory.ToolDefinitions(m.Tools)); err != nil || h != m.ToolsHash {
		return fmt.Errorf("tool pins: the definitions reported for %s %s do not hash to %s", m.Plugin, m.Server, m.ToolsHash)
	}
	k := defsKey(m.Plugin, m.Server, m.ToolsHash)
	if _, err := tx.Get(DefinitionsBucket, k); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	raw, err := json.Marshal(Definitions{Plugin: m.Plugin, Server: m.Server, Hash: m.ToolsHash, Tools: m.Tools, Seen: now})
	if err != nil {
		return err
	}
	if err := tx.Put(DefinitionsBucket, k, raw); err != nil {
		return err
	}
	kvs, err := tx.List(DefinitionsBucket, m.Plugin+" "+m.Server+" ")
	if err != nil || len(kvs) <= MaxDefinitionsPerServer {
		return err
	}
	pin, _, err := Get(tx, m.Plugin, m.Server)
	if err != nil {
		return err
	}
	type aged struct {
		key  string
		seen time.Time
	}
	var old []aged
	for _, kv := range kvs {
		var d Definitions
		if json.Unmarshal(kv.Value, &d) != nil {
			old = append(old, aged{kv.Key, time.Time{}}) // a damaged set goes first
			continue
		}
		if d.Hash == pin.Hash || kv.Key == k {
			continue
		}
		old = append(old, aged{kv.Key, d.Seen})
	}
	sort.Slice(old, func(i, j int) bool { return old[i].seen.Before(old[j].seen) })
	for i := 0; i < len(kvs)-MaxDefinitionsPerServer && i < len(old); i++ {
		if err := tx.Delete(DefinitionsBucket, old[i].key); err != nil {
			return err
		}
	}
	return nil
}

// Auto is the pin-from-first-report settings: per marketplace and per
// plugin, on or off; a plugin's own setting overrides its marketplace's,
// and a plugin with neither is off.
type Auto struct {
	Marketplaces map[string]bool `json:"marketplaces"`
	Plugins      map[string]bool `json:"plugins"`
}

// On reports whether the first report of an approved version of id pins
// its servers' definitions.
func (a Auto) On(id plugin.ID) bool {
	if on, ok := a.Plugins[id.String()]; ok {
		return on
	}
	return a.Marketplaces[id.Source]
}

// Scopes of an Auto setting.
const (
	ScopeMarketplace = "marketplace"
	ScopePlugin      = "plugin"
)

// SettingError is an Auto setting that cannot be stored: Field names what
// is wrong (scope, name or value).
type SettingError struct {
	Field, Problem string
}

func (e *SettingError) Error() string { return "pin from first report: " + e.Problem }

// SetAuto sets the pin-from-first-report setting of a marketplace or a
// plugin to "on" or "off"; "" removes it (a plugin then follows its
// marketplace, a marketplace is off).
func SetAuto(tx store.Tx, scope, name, value string) error {
	switch scope {
	case ScopeMarketplace:
		if name == "" || len(name) > 128 || strings.ContainsAny(name, "@/ \t\r\n") {
			return &SettingError{Field: "name", Problem: fmt.Sprintf("%q is not a marketplace name", name)}
		}
	case ScopePlugin:
		if id, err := plugin.ParseID(name); err != nil || id.String() != name {
			return &SettingError{Field: "name", Problem: fmt.Sprintf("%q is not a plugin id (name@marketplace)", name)}
		}
	default:
		return &SettingError{Field: "scope", Problem: fmt.Sprintf("scope %q is not marketplace or plugin", scope)}
	}
	switch value {
	case "":
		return tx.Delete(AutoBucket, scope+"/"+name)
	case "on", "off":
		return tx.Put(AutoBucket, scope+"/"+name, []byte(value))
	}
	return &SettingError{Field: "value", Problem: fmt.Sprintf("%q is not on, off or empty", value)}
}

// ReadAuto returns the pin-from-first-report settings.
func ReadAuto(r store.Reader) (Auto, error) {
	a := Auto{Marketplaces: map[string]bool{}, Plugins: map[string]bool{}}
	kvs, err := r.List(AutoBucket, "")
	if err != nil {
		return a, err
	}
	for _, kv := range kvs {
		scope, name, _ := strings.Cut(kv.Key, "/")
		v := string(kv.Value)
		if v != "on" && v != "off" {
			return a, &CorruptError{Bucket: AutoBucket, Key: kv.Key, Err: fmt.Errorf("value %q", v)}
		}
		switch scope {
		case ScopeMarketplace:
			a.Marketplaces[name] = v == "on"
		case ScopePlugin:
			a.Plugins[name] = v == "on"
		default:
			return a, &CorruptError{Bucket: AutoBucket, Key: kv.Key, Err: fmt.Errorf("scope %q", scope)}
		}
	}
	return a, nil
}
