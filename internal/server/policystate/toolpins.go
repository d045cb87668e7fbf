package policystate

import (
	"fmt"

	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/revocations"
	"github.com/wharfhq/wharf/internal/server/toolpins"
)

// Tool pins are part of the policy: an approval advances the head, so the
// signed bundle carries the pins (data.json: wharf.toolPins) and its ETag
// changes. The pin, the head and the audit entry commit together.

// ActionToolPinApprove is the audit action of an approval.
const ActionToolPinApprove = "toolpin.approve"

// NotReportedError is an approval of definitions no machine reports.
type NotReportedError struct{ Plugin, Server, Hash string }

func (e *NotReportedError) Error() string {
	return fmt.Sprintf("no machine reports server %q of %s listing definitions %s; GET /v1/toolpins/drift lists what machines report", e.Server, e.Plugin, e.Hash)
}

// AlreadyPinnedError is an approval of the definitions already pinned.
type AlreadyPinnedError struct{ Plugin, Server, Hash string }

func (e *AlreadyPinnedError) Error() string {
	return fmt.Sprintf("server %q of %s is already pinned to %s", e.Server, e.Plugin, e.Hash)
}

// TooManyPinsError is a new pin beyond toolpins.Max.
type TooManyPinsError struct{ Max int }

func (e *TooManyPinsError) Error() string {
	return fmt.Sprintf("there are already %d tool pins, the limit", e.Max)
}

// ApproveToolPin pins rec's server to rec.Hash, which some machine must
// report it listing (*NotReportedError otherwise): only definitions a
// machine actually listed can be approved. It returns the new head and the
// hash the pin replaced ("" for a first pin).
func (s *State[D]) ApproveToolPin(rec toolpins.Record, by Actor) (Head, string, error) {
	return s.approveToolPin(rec, by, false)
}

// PinFirst pins rec's server as ApproveToolPin does, only when nothing
// pins it yet (checked in the same transaction): the pin from the first
// report of an approved version. A server already pinned is left as it is
// (*AlreadyPinnedError, with the pin's hash).
func (s *State[D]) PinFirst(rec toolpins.Record, by Actor) (Head, error) {
	head, _, err := s.approveToolPin(rec, by, true)
	return head, err
}

func (s *State[D]) approveToolPin(rec toolpins.Record, by Actor, firstOnly bool) (Head, string, error) {
	var head Head
	var previous string
	err := s.st.Update(func(tx store.Tx) error {
		seen, err := toolpins.Reported(tx, rec.Plugin, rec.Server, rec.Hash)
		if err != nil {
			return err
		}
		if !seen {
			return &NotReportedError{Plugin: rec.Plugin, Server: rec.Server, Hash: rec.Hash}
		}
		old, had, err := toolpins.Get(tx, rec.Plugin, rec.Server)
		if err != nil {
			return err
		}
		if had && (old.Hash == rec.Hash || firstOnly) {
			return &AlreadyPinnedError{Plugin: rec.Plugin, Server: rec.Server, Hash: old.Hash}
		}
		previous = ""
		if had {
			previous = old.Hash
		} else {
			all, err := toolpins.All(tx)
			if err != nil {
				return err
			}
			if len(all) >= toolpins.Max {
				return &TooManyPinsError{Max: toolpins.Max}
			}
		}
		if err := toolpins.Put(tx, rec); err != nil {
			return err
		}
		layers, err := ReadLayers(tx)
		if err != nil {
			return err
		}
		revs, err := revocations.Active(tx)
		if err != nil {
			return err
		}
		if head, err = AdvanceHead(tx, layers, revs); err != nil {
			return err
		}
		return audit.Append(tx, audit.Entry{Time: rec.Approved, Action: ActionToolPinApprove, Actor: by.ID, Role: by.Role,
			Object: rec.Plugin + " " + rec.Server,
			Detail: map[string]any{"plugin": rec.Plugin, "server": rec.Server, "hash": rec.Hash, "previous": previous, "note": rec.Note,
				"policyVersion": head.Version, "revision": head.Revision}})
	})
	if err != nil {
		return Head{}, "", err
	}
	s.SetHead(head)
	return head, previous, nil
}
