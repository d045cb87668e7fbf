// Package store is wharf's persistent state behind a small interface: known
// marketplaces, the installed registry, trust pins, and the server's tokens,
// policy layers and audit log. The embedded default is bbolt; the interface is
// kept small so that other backends (etcd) can implement the same contract.
package store

import (
	"errors"
	"time"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrNotFound: the key does not exist in the bucket.
	ErrNotFound = errors.New("not found")
	// ErrLocked: another process holds the store and did not release it in time.
	ErrLocked = errors.New("store is locked by another wharf process")
	// ErrConflict: a compare-and-swap saw a different version than expected.
	ErrConflict = errors.New("version conflict")
	// ErrCorrupt: the state file is damaged (see CorruptError); it is never
	// replaced or repaired by opening it.
	ErrCorrupt = errors.New("state file is damaged")
	// ErrNoSpace: the store refused a write for lack of space (an etcd
	// cluster's space quota); the write was not applied. A full disk
	// under bbolt is syscall.ENOSPC instead.
	ErrNoSpace = errors.New("the store is out of space")
)

// KV is one key and its value.
type KV struct {
	Key   string
	Value []byte
}

// Reader reads within one consistent snapshot.
type Reader interface {
	// Get returns the value or ErrNotFound. The slice is the caller's.
	Get(bucket, key string) ([]byte, error)
	// List returns the entries whose key has the prefix, in key order.
	List(bucket, prefix string) ([]KV, error)
	// ListAfter returns, in key order, at most limit entries whose key
	// sorts after the given one ("" for the first); limit <= 0 means all.
	// It reads only what it returns, so a log can be paged through in
	// steps that cost the page, not the log.
	ListAfter(bucket, after string, limit int) ([]KV, error)
}

// Tx is a read-write transaction: all of its writes apply together or not at all.
type Tx interface {
	Reader
	Put(bucket, key string, value []byte) error
	Delete(bucket, key string) error // deleting a missing key is not an error
	// NextSequence returns a per-bucket counter that only grows (append-only logs).
	NextSequence(bucket string) (uint64, error)
}

// Store is wharf's state. Implementations are safe for concurrent use by the
// goroutines of one process; across processes, Open takes an exclusive lock.
type Store interface {
	// View runs fn in a read-only snapshot.
	View(fn func(Reader) error) error
	// Update runs fn in a read-write transaction; an error from fn rolls it back.
	Update(fn func(Tx) error) error
	Close() error
}

// Options tune Open.
type Options struct {
	// LockTimeout is how long Open waits for another process to release the
	// file before it fails with ErrLocked. Zero means 5 seconds.
	LockTimeout time.Duration
	// ReadOnly opens with a shared lock; Update then fails.
	ReadOnly bool
}

// EndpointHealth is what a shared backend knows of one of its servers.
type EndpointHealth struct {
	Endpoint string `json:"endpoint"`
	Healthy  bool   `json:"healthy"`
	// Error is the last check's failure when not Healthy.
	Error string `json:"error,omitempty"`
}

// HealthReporter is implemented by backends with several servers (etcd):
// Health returns each server's state as last checked, without waiting on
// any of them.
type HealthReporter interface {
	Health() []EndpointHealth
}

// Stats are a backend's counters since it was opened, for metrics.
type Stats struct {
	// Retries counts requests sent again to another server after one did
	// not answer in time or failed.
	Retries uint64
	// Conflicts counts transactions that ran again because a concurrent
	// commit changed what they read.
	Conflicts uint64
	// Ambiguous counts commits whose first answer was lost; each was
	// resolved by sending it again (it applies at most once).
	Ambiguous uint64
}

// StatsReporter is implemented by backends that count their retries.
type StatsReporter interface {
	Stats() Stats
}
