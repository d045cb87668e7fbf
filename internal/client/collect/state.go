package collect

import (
	"encoding/json"
	"os"
	"time"

	"github.com/gofrs/flock"

	"github.com/wharfhq/wharf/internal/core/atomicfile"
)

// State is what the reports of one home remember between runs.
type State struct {
	// Server is where the last report was sent; SentHash is its Hash.
	Server   string    `json:"server,omitempty"`
	SentHash string    `json:"sentHash,omitempty"`
	SentAt   time.Time `json:"sentAt,omitzero"`
	// Checked is when a report last started: background reports run at
	// most once per interval from it.
	Checked time.Time `json:"checked,omitzero"`
	// Pending is the hash of a report that did not reach the server, and
	// PendingError why; the next run sends it again.
	Pending      string    `json:"pending,omitempty"`
	PendingSince time.Time `json:"pendingSince,omitzero"`
	PendingError string    `json:"pendingError,omitempty"`
}

// ReadState reads the state at path; an absent or unreadable file is the
// zero State (the next report rewrites it).
func ReadState(path string) State {
	var s State
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &s) != nil {
		return State{}
	}
	return s
}

// Write replaces the state at path whole (crash-safe).
func (s State) Write(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(b, '\n'), 0o600)
}

// Due reports whether a background report should run at now: reports are
// on (interval > 0) and none started in the last interval.
func (s State) Due(now time.Time, interval time.Duration) bool {
	if interval <= 0 {
		return false
	}
	return s.Checked.IsZero() || now.Sub(s.Checked) >= interval || now.Before(s.Checked)
}

// Heartbeat is how old the last report sent may be before an unchanged
// inventory is sent again: the server then still sees the machine (its
// last-seen time, and so its stale machines, stay true to within a day),
// and an unchanged report costs it a read.
const Heartbeat = 24 * time.Hour

// Unchanged reports whether a report of hash was already sent to server,
// less than Heartbeat before now.
func (s State) Unchanged(server, hash string, now time.Time) bool {
	age := now.Sub(s.SentAt)
	return s.Pending == "" && s.Server == server && s.SentHash == hash && age >= 0 && age < Heartbeat
}

// Sent records a report the server took.
func (s *State) Sent(server, hash string, now time.Time) {
	s.Server, s.SentHash, s.SentAt = server, hash, now.UTC()
	s.Pending, s.PendingSince, s.PendingError = "", time.Time{}, ""
}

// Failed records a report that did not get through, for the next try.
func (s *State) Failed(hash string, now time.Time, err error) {
	if s.Pending == "" {
		s.PendingSince = now.UTC()
	}
	s.Pending = hash
	s.PendingError = truncate(err.Error(), 1000)
}

// TryLock takes the report lock at path without waiting; ok is false when
// another report holds it.
func TryLock(path string) (unlock func(), ok bool, err error) {
	l := flock.New(path)
	got, err := l.TryLock()
	if err != nil {
		return nil, false, err
	}
	if !got {
		return nil, false, nil
	}
	return func() { l.Unlock() }, true, nil
}
