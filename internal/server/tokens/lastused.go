package tokens

import (
	"sync"
	"time"

	"github.com/wharfhq/wharf/internal/core/store"
)

// LastUsedBucket holds when each token was last used: token id → the time
// (RFC 3339, UTC). It is apart from the records so that recording a use
// never rewrites a token.
const LastUsedBucket = "api-token-last-used"

// DefaultLastUsedEvery is how stale a token's recorded last use may be:
// a replica writes it at most once per token in this interval.
const DefaultLastUsedEvery = 5 * time.Minute

// maxTracked bounds the in-memory record of writes made: past it, it
// starts again empty (at worst, one more write per token).
const maxTracked = MaxCached

// LastUse records when tokens are used without a store write per request:
// Seen writes a token's use only when this process has not written one for
// it within Every. The recorded time is thus at most Every older than the
// true last use (plus how long a replica that saw the use keeps quiet).
// Safe for concurrent use.
type LastUse struct {
	st    store.Store
	every time.Duration

	mu      sync.Mutex
	written map[string]time.Time // token id → the last use this process wrote
}

// NewLastUse records uses in st at most once per token per every (zero:
// DefaultLastUsedEvery).
func NewLastUse(st store.Store, every time.Duration) *LastUse {
	if every <= 0 {
		every = DefaultLastUsedEvery
	}
	return &LastUse{st: st, every: every, written: map[string]time.Time{}}
}

// Seen notes that token id was used at now: Due, then Write when due. It
// reports whether it wrote.
func (l *LastUse) Seen(id string, now time.Time) (bool, error) {
	if !l.Due(id, now) {
		return false, nil
	}
	if err := l.Write(id, now); err != nil {
		return false, err
	}
	return true, nil
}

// Due reports whether the use of token id at now is to be written: when
// this process last wrote (or tried to write) the token's use more than
// Every before now, or never did. A true answer claims the write, so
// concurrent uses write once; a failed write counts as a try, so a store
// that refuses writes is asked once per interval, not on every request.
func (l *LastUse) Due(id string, now time.Time) bool {
	now = now.UTC()
	l.mu.Lock()
	defer l.mu.Unlock()
	if last, ok := l.written[id]; ok && now.Sub(last) < l.every {
		return false
	}
	if len(l.written) >= maxTracked {
		l.written = map[string]time.Time{}
	}
	l.written[id] = now
	return true
}

// Write records that token id was used at now, unless the store already
// holds a later use (another replica's).
func (l *LastUse) Write(id string, now time.Time) error {
	now = now.UTC()
	return l.st.Update(func(tx store.Tx) error {
		if raw, err := tx.Get(LastUsedBucket, id); err == nil {
			if t, perr := time.Parse(time.RFC3339Nano, string(raw)); perr == nil && !t.Before(now) {
				return nil
			}
		}
		return tx.Put(LastUsedBucket, id, []byte(now.Format(time.RFC3339Nano)))
	})
}

// LastUsed returns the recorded last use of every token that has one.
func LastUsed(r store.Reader) (map[string]time.Time, error) {
	kvs, err := r.List(LastUsedBucket, "")
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(kvs))
	for _, kv := range kvs {
		if t, err := time.Parse(time.RFC3339Nano, string(kv.Value)); err == nil {
			out[kv.Key] = t
		}
	}
	return out, nil
}

// ForgetLastUse deletes a token's recorded use (with the token).
func ForgetLastUse(tx store.Tx, id string) error { return tx.Delete(LastUsedBucket, id) }
