// Package requests is the server's queue of requests: a developer asks for
// a plugin that policy denies, with a reason, and an administrator approves
// (optionally until a date: a waiver that expires by itself) or denies it,
// with a note. The approved, unexpired requests are policy: the server
// carries them in its signed bundle as policy.Waivers. Everything is kept
// in a store.Store (bbolt or etcd); the contract test runs on both.
package requests

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wharfhq/wharf/internal/core/lazyre"
	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/plugin"
)

// Bucket holds the requests: id → Request.
const Bucket = "api-requests"

// Bounds.
const (
	MaxReasonLen = 2048 // bytes of a developer's reason
	MaxNoteLen   = 1024 // bytes of an administrator's note
	// MaxPendingPerToken is how many unanswered requests one token may
	// have at a time.
	MaxPendingPerToken = 20
	// Max is how many requests the server keeps in all.
	Max = 100000
)

// Statuses of a request.
const (
	StatusPending  = "pending"
	StatusApproved = "approved"
	StatusDenied   = "denied"
	// StatusExpired is an approved request past its date: reported, never
	// stored.
	StatusExpired = "expired"
)

// Decisions of an answer.
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// Answer is an administrator's answer to a request.
type Answer struct {
	Status string     `json:"status"` // approved or denied
	Until  *time.Time `json:"until,omitempty"`
	Note   string     `json:"note,omitempty"`
	By     string     `json:"by"` // the admin token
	At     time.Time  `json:"at"`
}

// Request is one request for a plugin.
type Request struct {
	ID      string    `json:"id"`
	Plugin  string    `json:"plugin"` // name@marketplace
	Reason  string    `json:"reason"`
	Token   string    `json:"token"` // the requesting token's id, as the server knows it
	Role    string    `json:"role"`
	Machine string    `json:"machine,omitempty"` // the machine id the client sent (not authenticated)
	Created time.Time `json:"created"`
	Answer  *Answer   `json:"answer,omitempty"`
}

// Status is the request's status at now: pending, approved, expired or
// denied.
func (r Request) Status(now time.Time) string {
	switch {
	case r.Answer == nil:
		return StatusPending
	case r.Answer.Status == StatusApproved && r.Answer.Until != nil && !now.Before(*r.Answer.Until):
		return StatusExpired
	}
	return r.Answer.Status
}

// Waiver is the request as the bundle carries it, when it is approved.
func (r Request) Waiver() policy.Waiver {
	w := policy.Waiver{Request: r.ID, Plugin: r.Plugin}
	if r.Answer != nil {
		w.Until, w.By, w.Note, w.Approved = r.Answer.Until, r.Answer.By, r.Answer.Note, r.Answer.At
	}
	return w
}

var idRE = lazyre.New(`^q-[0-9a-f]{16}$`)

// ValidID reports whether id has the form of a request id.
func ValidID(id string) bool { return idRE.MatchString(id) }

// NewID is a new request id.
func NewID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "q-" + hex.EncodeToString(b[:]), nil
}

// machineRE is the form of a machine id a client may send (compiled on
// first use: lazyre).
var machineRE = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// CheckNew checks and normalizes a new request's plugin, reason and
// machine, naming the field that is wrong.
func CheckNew(r *Request) error {
	r.Plugin, r.Reason, r.Machine = strings.TrimSpace(r.Plugin), strings.TrimSpace(r.Reason), strings.TrimSpace(r.Machine)
	if id, err := plugin.ParseID(r.Plugin); err != nil || id.String() != r.Plugin {
		return &FieldError{Field: "plugin", Message: fmt.Sprintf("%q is not a plugin id; write it as name@marketplace", trim(r.Plugin))}
	}
	if err := checkText("reason", r.Reason, MaxReasonLen); err != nil {
		return err
	}
	if r.Reason == "" {
		return &FieldError{Field: "reason", Message: "say why you need the plugin; an administrator reads it before answering"}
	}
	if r.Machine != "" && !machineRE.MatchString(r.Machine) {
		return &FieldError{Field: "machine", Message: fmt.Sprintf("%q is not a machine id", trim(r.Machine))}
	}
	return nil
}

// CheckAnswer checks and normalizes an answer's note and date at now.
func CheckAnswer(a *Answer, now time.Time) error {
	a.Note = strings.TrimSpace(a.Note)
	if err := checkText("note", a.Note, MaxNoteLen); err != nil {
		return err
	}
	if a.Until != nil {
		if a.Status != StatusApproved {
			return &FieldError{Field: "until", Message: "only an approval has a date; deny without one"}
		}
		if !a.Until.After(now) {
			return &FieldError{Field: "until", Message: fmt.Sprintf("%s is not in the future", a.Until.UTC().Format(time.RFC3339))}
		}
		u := a.Until.UTC()
		a.Until = &u
	}
	return nil
}

func checkText(field, s string, max int) error {
	if len(s) > max {
		return &FieldError{Field: field, Message: fmt.Sprintf("%s is %d bytes; the limit is %d", field, len(s), max)}
	}
	if !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f }) {
		return &FieldError{Field: field, Message: field + " must be UTF-8 text without control characters"}
	}
	return nil
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// All returns every request, oldest first.
func All(r store.Reader) ([]Request, error) {
	out, err := store.DecodeList[Request](r, Bucket, "", func(key string, err error) error {
		return fmt.Errorf("request %s: corrupt record: %w", key, err)
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Of returns the requests token made, oldest first.
func Of(r store.Reader, token string) ([]Request, error) {
	all, err := All(r)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, q := range all {
		if q.Token == token {
			out = append(out, q)
		}
	}
	return out, nil
}

// Get returns request id, or *NotFoundError.
func Get(r store.Reader, id string) (Request, error) {
	var q Request
	raw, err := r.Get(Bucket, id)
	if errors.Is(err, store.ErrNotFound) {
		return q, &NotFoundError{ID: id}
	}
	if err != nil {
		return q, err
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return q, fmt.Errorf("request %s: corrupt record: %w", id, err)
	}
	return q, nil
}

// Create stores q, a new request checked by CheckNew, in tx. The same
// token asking again for a plugin it has a pending request for is
// *DuplicateError; more than MaxPendingPerToken pending, or Max in all,
// is *QuotaError.
func Create(tx store.Tx, q Request) error {
	all, err := All(tx)
	if err != nil {
		return err
	}
	if len(all) >= Max {
		return &QuotaError{Message: fmt.Sprintf("the server keeps %d requests, its limit; an administrator must remove old ones", Max)}
	}
	pending := 0
	for _, o := range all {
		if o.Token != q.Token || o.Answer != nil {
			continue
		}
		if o.Plugin == q.Plugin {
			return &DuplicateError{Existing: o}
		}
		pending++
	}
	if pending >= MaxPendingPerToken {
		return &QuotaError{Message: fmt.Sprintf("token %s has %d unanswered requests, the limit; wait for answers (wharf request list)", q.Token, pending)}
	}
	return put(tx, q)
}

// Respond records a in tx as the answer to request id and returns the
// request answered. A pending request may be approved or denied; an
// approved one may be denied (the waiver is withdrawn); anything else is
// *AnsweredError.
func Respond(tx store.Tx, id string, a Answer) (Request, error) {
	q, err := Get(tx, id)
	if err != nil {
		return q, err
	}
	if q.Answer != nil && !(q.Answer.Status == StatusApproved && a.Status == StatusDenied) {
		return q, &AnsweredError{Request: q}
	}
	q.Answer = &a
	return q, put(tx, q)
}

func put(tx store.Tx, q Request) error {
	raw, err := json.Marshal(q)
	if err != nil {
		return err
	}
	return tx.Put(Bucket, q.ID, raw)
}

// Waivers returns the approved requests in force at now, in request id
// order.
func Waivers(r store.Reader, now time.Time) (policy.Waivers, error) {
	all, err := All(r)
	if err != nil {
		return nil, err
	}
	var out policy.Waivers
	for _, q := range all {
		if q.Status(now) == StatusApproved {
			out = append(out, q.Waiver())
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Request < out[j].Request })
	return out, nil
}

// WaiverBucket holds the waivers the policy carries: keyInForce →
// policy.Waivers, written by Refresh. The bundle and the policy version
// read this one record, so every replica builds the same bundle for the
// same store whatever its clock says.
const WaiverBucket = "api-waivers"

const keyInForce = "in-force"

// InForce returns the waivers the policy carries (the last Refresh).
func InForce(r store.Reader) (policy.Waivers, error) {
	raw, err := r.Get(WaiverBucket, keyInForce)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ws policy.Waivers
	if err := json.Unmarshal(raw, &ws); err != nil {
		return nil, fmt.Errorf("waivers in force (bucket %s): corrupt record: %w", WaiverBucket, err)
	}
	return ws, nil
}

// Refresh makes the waivers the policy carries those in force at now, in
// tx, and reports whether they changed (then the policy head must
// advance in the same transaction). An approval past its date leaves them
// at the first Refresh after it; clients drop it at that date themselves.
func Refresh(tx store.Tx, now time.Time) (bool, error) {
	old, err := InForce(tx)
	if err != nil {
		return false, err
	}
	ws, err := Waivers(tx, now)
	if err != nil {
		return false, err
	}
	a, _ := json.Marshal(old)
	b, err := json.Marshal(ws)
	if err != nil {
		return false, err
	}
	if string(a) == string(b) {
		return false, nil
	}
	if len(ws) == 0 {
		return true, tx.Delete(WaiverBucket, keyInForce)
	}
	return true, tx.Put(WaiverBucket, keyInForce, b)
}

// Version is the policy version v (of the layers and revocations) with the
// waivers ws in force. With none it is v, so a server that never approved
// a request keeps the versions it always had.
func Version(v string, ws policy.Waivers) string {
	if len(ws) == 0 {
		return v
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", v)
	for _, w := range ws {
		until := ""
		if w.Until != nil {
			until = w.Until.UTC().Format(time.RFC3339Nano)
		}
		// What a client acts on and shows.
		fmt.Fprintf(h, "waiver %q %q %q %q %q\n", w.Request, w.Plugin, until, w.By, w.Note)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// FieldError is a field of a request or answer that is not acceptable.
type FieldError struct{ Field, Message string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// NotFoundError is a request id the server does not have.
type NotFoundError struct{ ID string }

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("no request %s; GET /v1/requests lists them", e.ID)
}

// DuplicateError is a second pending request of one token for one plugin.
type DuplicateError struct{ Existing Request }

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("you already asked for %s (request %s, %s) and it is not answered yet; wharf request list shows it",
		e.Existing.Plugin, e.Existing.ID, e.Existing.Created.UTC().Format("2006-01-02"))
}

// AnsweredError is an answer to a request that cannot take it.
type AnsweredError struct{ Request Request }

func (e *AnsweredError) Error() string {
	a := e.Request.Answer
	return fmt.Sprintf("request %s is already %s by %s (%s); only an approved request can still be denied", e.Request.ID, a.Status, a.By, a.At.UTC().Format(time.RFC3339))
}

// QuotaError is a request over a limit.
type QuotaError struct{ Message string }

func (e *QuotaError) Error() string { return e.Message }
