package mcpregistry

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// Bucket holds the servers an administrator added: "<name> <version>" →
// Record.
const Bucket = "mcp-registry"

// Max is how many server versions an administrator can add.
const Max = 10000

// Record is a server version an administrator added.
type Record struct {
	Server Server    `json:"server"`
	By     string    `json:"by"`
	Added  time.Time `json:"added"`
}

// ErrNotFound is a server version the registry does not have.
var ErrNotFound = errors.New("no such server version")

// ExistsError is an added server version that is there already.
type ExistsError struct{ Name, Version string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("server %s version %s is in the registry already; delete it first, or add another version", e.Name, e.Version)
}

// ReservedError is an added server named in the namespace of the servers
// derived from plugins.
type ReservedError struct{ Name string }

func (e *ReservedError) Error() string {
	return fmt.Sprintf("server name %q: the namespaces %s* are the approved plugins' servers; name an added server in your own namespace (com.example/server)", clip(e.Name), PluginNamespacePrefix)
}

// FullError is a registry that holds Max added server versions.
type FullError struct{}

func (FullError) Error() string {
	return fmt.Sprintf("the registry holds %d added server versions, the limit; delete some first", Max)
}

// CorruptError is a stored record that cannot be read.
type CorruptError struct {
	Key string
	Err error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("mcp registry: record %q of bucket %s is corrupt (%v); remove it from the store and add the server again", e.Key, Bucket, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

func key(name, version string) string { return name + " " + version }

// All returns every added server version, by name then when it was added.
func All(r store.Reader) ([]Record, error) {
	out, err := store.DecodeList[Record](r, Bucket, "", func(key string, err error) error {
		return &CorruptError{Key: key, Err: err}
	})
	if err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Server.Name != out[j].Server.Name {
			return out[i].Server.Name < out[j].Server.Name
		}
		return out[i].Added.Before(out[j].Added)
	})
	return out, nil
}

// Add stores a server version in tx. It is refused when the version is
// there already, when the name is in the plugins' namespace, or when the
// registry is full.
func Add(tx store.Tx, rec Record) error {
	if err := rec.Server.Validate(); err != nil {
		return err
	}
	if strings.HasPrefix(rec.Server.Name, PluginNamespacePrefix) {
		return &ReservedError{Name: rec.Server.Name}
	}
	k := key(rec.Server.Name, rec.Server.Version)
	if _, err := tx.Get(Bucket, k); err == nil {
		return &ExistsError{Name: rec.Server.Name, Version: rec.Server.Version}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	kvs, err := tx.List(Bucket, "")
	if err != nil {
		return err
	}
	if len(kvs) >= Max {
		return FullError{}
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Put(Bucket, k, raw)
}

// Delete removes an added server version from tx and returns it.
func Delete(tx store.Tx, name, version string) (Record, error) {
	k := key(name, version)
	raw, err := tx.Get(Bucket, k)
	if errors.Is(err, store.ErrNotFound) {
		return Record{}, ErrNotFound
	}
	if err != nil {
		return Record{}, err
	}
	var rec Record
	if err := json.Unmarshal(raw, &rec); err != nil {
		rec = Record{Server: Server{Name: name, Version: version}}
	}
	return rec, tx.Delete(Bucket, k)
}
